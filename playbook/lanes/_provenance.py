"""What ran: the GPUs (nvidia-smi), the server's version and commit (its own info endpoint), the lane's
commit, and peak GPU memory sampled while the measured requests run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import urllib.error
import urllib.request

# sglang answers /server_info (older releases /get_server_info) with `version`; sglang-omni is a
# FastAPI app whose /openapi.json carries its version. The first that answers wins.
INFO_PATHS = ("/server_info", "/get_server_info", "/openapi.json")
_SCM_COMMIT = re.compile(r"\+g([0-9a-f]{7,40})")  # a setuptools-scm dev version: 0.5.23.dev41+g1a2b3c4
SAMPLE_EVERY_S = 0.2


def _smi(*args: str, timeout: float = 10) -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def gpu_info() -> dict:
    """Model, count, driver and CUDA version of this machine's NVIDIA GPUs; {"present": False} without nvidia-smi."""
    rows = _smi("--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits")
    if rows is None:
        return {"present": False}
    gpus = []
    for line in rows.strip().splitlines():
        name, memory, driver = (part.strip() for part in (line.split(",") + ["", ""])[:3])
        gpus.append({"name": name, "memory_total_mib": int(memory) if memory.isdigit() else None, "driver": driver})
    header = _smi() or ""
    cuda = re.search(r"CUDA Version:\s*([0-9.]+)", header)
    models = sorted({g["name"] for g in gpus})
    return {"present": True, "count": len(gpus), "model": ", ".join(models), "driver": gpus[0]["driver"] if gpus else None,
            "cuda": cuda.group(1) if cuda else None, "gpus": gpus}


def server_info(base: str | None, timeout: float = 5) -> dict:
    """The server's version and commit as its own info endpoint reports them (nulls when none answers)."""
    if not base:
        return {"version": None, "commit": None, "source": None}
    for path in INFO_PATHS:
        try:
            with urllib.request.urlopen(base + path, timeout=timeout) as resp:
                data = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        info = data.get("info") if path == "/openapi.json" else data
        version = (info or {}).get("version") if isinstance(info, dict) else None
        if version is None:
            continue
        commit = data.get("commit") or data.get("git_commit")
        if commit is None:
            m = _SCM_COMMIT.search(str(version))
            commit = m.group(1) if m else None
        return {"version": str(version), "commit": commit, "source": path}
    return {"version": None, "commit": None, "source": None}


def lane_commit() -> dict:
    """The git commit the lane scripts were run from, and whether they had local edits."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=here, capture_output=True,
                               text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}


class MemorySampler:
    """Peak used memory per GPU (nvidia-smi, every SAMPLE_EVERY_S) between start() and stop()."""

    def __init__(self):
        self.peaks: dict[int, int] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        out = _smi("--query-gpu=index,memory.used", "--format=csv,noheader,nounits", timeout=5)
        if out is None:
            return
        for line in out.strip().splitlines():
            idx, _, used = line.partition(",")
            if idx.strip().isdigit() and used.strip().isdigit():
                i, mib = int(idx), int(used)
                self.peaks[i] = max(self.peaks.get(i, 0), mib)
        self.samples += 1

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(SAMPLE_EVERY_S):
                return

    def start(self) -> "MemorySampler":
        self._thread.start()
        return self

    def stop(self) -> dict:
        """The peaks as summary fields; {} when the measured requests never started."""
        if not self._thread.is_alive() and not self.samples:
            return {}
        self._stop.set()
        self._thread.join(10)
        self._sample()  # one last reading after the final request
        if not self.samples:
            return {"gpu_memory_peak_mib": None, "gpu_memory_note": "nvidia-smi not available: no GPU memory sampled"}
        return {"gpu_memory_peak_mib": max(self.peaks.values()) if self.peaks else None,
                "gpu_memory_peak_per_gpu_mib": {str(k): v for k, v in sorted(self.peaks.items())},
                "gpu_memory_samples": self.samples}

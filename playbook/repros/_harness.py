"""Shared measurement harness for the op-level reproductions in playbook/repros/.

Each repro script is standalone apart from this module: torch (and transformers
where the subject is a model part), random weights at real model sizes, a before
and an after variant of one technique on the same inputs, an equivalence check,
CUDA-event timings and peak memory. It writes a raw record; `dossier repro
record` files it under references/measurements/ untouched.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch

SCHEMA = 1


def parse_args(doc: str, extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--out", help="write the raw record (JSON) here; default: print it")
    p.add_argument("--quick", action="store_true", help="tiny shapes and few iterations (a CPU smoke run)")
    p.add_argument("--iters", type=int, default=None, help="timed iterations per variant (median reported)")
    p.add_argument("--warmup", type=int, default=None)
    p.add_argument("--cpu", default="auto",
                   help="pin this process to one CPU core: its number, 'auto' (the last allowed core) or 'none'")
    if extra:
        extra(p)
    args = p.parse_args()
    args.iters = args.iters or (3 if args.quick else 30)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.quick else 10)
    args.pinning = pin(args.cpu, args.warmup)
    return args


def pin(cpu: str, warmup: int) -> dict:
    """Pin what can be pinned for launch-bound eager paths: one CPU core for the launching thread
    (where the OS allows it) and a fixed warm-up. What was pinned goes into the record."""
    out: dict = {"warmup_iters": warmup}
    if cpu != "none" and hasattr(os, "sched_setaffinity"):
        try:
            allowed = sorted(os.sched_getaffinity(0))
            core = allowed[-1] if cpu == "auto" else int(cpu)
            os.sched_setaffinity(0, {core})
            out["cpu_affinity"] = [core]
            # torch sized its intra-op pool to every core at import; left so, its threads share the
            # one core and each host-side torch op waits on them (sglang#16781's after path went
            # from 2 ms to 128 ms, and qwen3_asr_encoder.py never finished).
            torch.set_num_threads(1)
            out["torch_threads"] = 1
        except (OSError, ValueError) as exc:
            out["cpu_affinity"] = f"not pinned: {exc}"
    return out


def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def dtype() -> torch.dtype:
    return torch.bfloat16 if torch.cuda.is_available() else torch.float32


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timeit(fn: Callable[[], object], iters: int, warmup: int) -> dict:
    """Median and spread (p10, p90) in ms: CUDA events on a GPU, perf_counter on a CPU."""
    for _ in range(warmup):
        fn()
    sync()
    samples = []
    for _ in range(iters):
        if torch.cuda.is_available():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1e3)
    samples.sort()
    return {
        "median": statistics.median(samples),
        "p10": samples[int(0.1 * (len(samples) - 1))],
        "p90": samples[int(0.9 * (len(samples) - 1))],
        "n": len(samples),
    }


def wall_ms(fn: Callable[[], object]) -> float:
    """One host-timed call, synchronized: for costs paid once (capture, first call)."""
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return (time.perf_counter() - t0) * 1e3


def peak_mib(fn: Callable[[], object]) -> float | None:
    """Peak allocated memory during one call, above what was allocated before it."""
    if not torch.cuda.is_available():
        return None
    sync()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    sync()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def max_abs_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max().item()) if a.numel() else 0.0


def case(name: str, shape: dict, before: dict | None, after: dict | None, *, peak_before=None, peak_after=None,
         err=None, modelled: dict | None = None, **extra) -> dict:
    """One row of a record; `extra` carries subject-specific measured values. `modelled` names each
    value that was computed rather than timed (before_ms, after_ms, or an extra's key) with how."""
    row = {"name": name, "shape": shape}
    if before is not None and after is not None:
        row.update({
            "before_ms": round(before["median"], 4), "after_ms": round(after["median"], 4),
            "speedup": round(before["median"] / after["median"], 3) if after["median"] > 0 else None,
            "before_spread_ms": [round(before["p10"], 4), round(before["p90"], 4)],
            "after_spread_ms": [round(after["p10"], 4), round(after["p90"], 4)],
        })
    row["peak_mib_before"] = None if peak_before is None else round(peak_before, 2)
    row["peak_mib_after"] = None if peak_after is None else round(peak_after, 2)
    row["max_abs_err"] = err
    if modelled:
        row["modelled"] = dict(modelled)
    if extra:
        row["extra"] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in extra.items()}
    return row


def _device_info() -> dict:
    try:
        import transformers

        tf = transformers.__version__
    except ImportError:
        tf = None
    return {
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU ({platform.machine()})",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": tf,
    }


def emit(script: str, subject: str, technique: str, cases: list[dict], args: argparse.Namespace,
         **fields) -> dict:
    """Write the raw record: subject, script and its sha256, device, date, cases."""
    path = Path(script).resolve()
    root = path.parents[2]  # playbook/repros/<script>
    record = {
        "schema": SCHEMA,
        "subject": subject,
        "technique": technique,
        "script": str(path.relative_to(root)),
        "script_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "device": _device_info(),
        "measured": _dt.datetime.now(_dt.timezone.utc).date().isoformat(),
        "quick": bool(args.quick),
        "pinning": getattr(args, "pinning", {}),
        "cases": cases,
    }
    record.update(fields)  # e.g. upstream: which upstream code ran, or what stopped it
    text = json.dumps(record, indent=1) + "\n"
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, out)
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return record


def summary(cases: list[dict]) -> None:
    for c in cases:
        sp = c.get("speedup")
        print(f"  {c['name']:<40} before {c.get('before_ms', '-'):>9} ms  after {c.get('after_ms', '-'):>9} ms"
              f"  x{sp if sp is not None else '-'}  err {c.get('max_abs_err')}", file=sys.stderr)

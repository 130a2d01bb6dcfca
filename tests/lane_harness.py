"""Lanes in this process: load a lane script, parse its registry args, build its requests and launch.

The contract tests use the lanes' own builders (`Lane.calls`, `server_command`,
`engine_kwargs`), never copies of their bodies. Stand-ins under tests/fakes/ make the optional
client tools deterministic: `bin/espeak-ng` (speech), `hf/transformers` (Qwen-VL's processor
contract on numpy) and, for subprocess runs, `engine/sglang` (an in-process Engine).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from dossier.yamlio import read_yaml

ROOT = Path(__file__).resolve().parents[1]
LANES_DIR = ROOT / "playbook" / "lanes"
FAKES = Path(__file__).resolve().parent / "fakes"
REGISTRY = read_yaml(ROOT / "playbook" / "lanes.yaml")["lanes"]
BY_ID = {lane["id"]: lane for lane in REGISTRY}
# Fewer frames keep the builders quick; the requests have the same shape.
QUICK = {"vl-long-video-chunked": ["--frames", "24"], "vl-video-processor": ["--frames", "4", "--size", "56"]}
# Launch variants beyond the registry args, so every flag a lane can emit is checked.
LAUNCH_VARIANTS = {
    "vl-single-image": [["--tp", "2"]],
    "vl-long-video-chunked": [["--feature-transport", t] for t in ("cpu", "cuda_ipc", "cuda_vmm")],
    "vl-video": [["--feature-transport", "cuda_ipc"]],
    "omni-audio-video": [["--tp", "2"]],
}


def _module(script: str):
    name = "lane_" + Path(script).stem
    if name not in sys.modules:
        sys.path.insert(0, str(LANES_DIR))
        spec = importlib.util.spec_from_file_location(name, ROOT / script)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def lane_module(lane_id: str):
    return _module(BY_ID[lane_id]["script"])


def new_lane(lane_id: str, *extra: str):
    """(lane, args) as the script's command line would make them, with the registry's args and model."""
    module = lane_module(lane_id)
    base = sys.modules["_lane"].Lane
    cls = next(v for v in vars(module).values()
               if isinstance(v, type) and issubclass(v, base) and v.__module__ == module.__name__)
    lane = cls()
    entry = BY_ID[lane_id]
    argv = [*map(str, entry.get("args", [])), "--model", entry["model"], "--lane-id", lane_id,
            *QUICK.get(lane_id, []), *extra]
    args = sys.modules["_runner"].build_parser(lane).parse_args(argv)
    lane.name = lane_id
    return lane, args


@contextlib.contextmanager
def client_tools():
    """The fake espeak-ng on PATH and the fake transformers importable, for this process."""
    old = {key: os.environ.get(key) for key in ("PATH", "FAKE_ESPEAK_PYTHON")}
    os.environ["PATH"] = f"{FAKES / 'bin'}{os.pathsep}{old['PATH'] or ''}"
    os.environ["FAKE_ESPEAK_PYTHON"] = sys.executable
    sys.path.insert(0, str(FAKES / "hf"))
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        sys.path.remove(str(FAKES / "hf"))


def built_calls(lane_id: str, *extra: str, requests: int = 4) -> list:
    """Every request the lane makes for `requests` indices (covering its input styles), via Lane.calls."""
    lane, args = new_lane(lane_id, *extra)
    with client_tools(), tempfile.TemporaryDirectory() as workdir:
        lane.prepare(args, workdir)
        try:
            return [call for i in range(requests) for call in lane.calls(args, i)]
        finally:
            lane.close()


def launch(lane_id: str, *extra: str) -> tuple[list[str] | None, dict, dict | None]:
    """(server argv, server env, Engine kwargs) of the lane as its command line would launch it."""
    lane, args = new_lane(lane_id, *extra)
    engine = lane.engine_kwargs(args)
    if engine is not None:
        return None, {}, engine
    return lane.server_command(args), lane.server_env(args), None


def subprocess_env(**env: str) -> dict:
    """Environment for running a lane script with the fakes (espeak-ng, transformers, sglang)."""
    out = dict(os.environ, FAKE_ESPEAK_PYTHON=sys.executable, **env)
    out["PATH"] = f"{FAKES / 'bin'}{os.pathsep}{out.get('PATH', '')}"
    paths = [str(FAKES / "hf"), str(FAKES / "engine"), out.get("PYTHONPATH", "")]
    out["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return out

"""The GPU validation lanes of playbook/lanes.yaml: the registry, how a lane runs, its dry-run.

The dry-run probe is behind rule L012: every lane script must print its plan with
`--dry-run`, and the server command it prints must match the registry's `server.cmd`
(or, for an in-process lane, its `engine:` line the registry's `engine`).
All probes run in the one lane interpreter of dossier.lane_interpreter (one process
per lane, in parallel, only when it breaks), and verdicts are cached by the content of
the lane entry and of every script in the lane's folder, so `dossier check` stays fast.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .cache import DiskCache, content_key
from .errors import DossierError
from .yamlio import YamlError, line_of, read_yaml

REGISTRY = "playbook/lanes.yaml"
DRY_RUN_TIMEOUT = 30


@dataclass
class Registry:
    """The lane registry as read: entries with their lines, or the one problem that stopped the read."""

    entries: list[tuple[int, object]] = field(default_factory=list)  # (line, entry); an entry may be malformed
    problem: tuple[int, str] | None = None
    present: bool = True


def read_registry(root: Path) -> Registry:
    path = root / REGISTRY
    if not path.exists():
        return Registry(present=False)
    try:
        data = read_yaml(path, REGISTRY, root)
    except YamlError as exc:
        return Registry(problem=(exc.line, f"invalid YAML: {exc.problem}"))
    except DossierError as exc:
        return Registry(problem=(1, str(exc)))
    lanes = data.get("lanes") if isinstance(data, dict) else None
    if not isinstance(lanes, list):
        return Registry(problem=(1, "expected a top-level 'lanes' list"))
    return Registry([(line_of(lanes, index=i), entry) for i, entry in enumerate(lanes)])


def load_lanes(root: Path) -> list[dict]:
    """The registry's lane entries; a clear DossierError when the file is unusable."""
    registry = read_registry(root)
    if not registry.present:
        raise DossierError(f"{root / REGISTRY}: no such file")
    if registry.problem:
        raise DossierError(f"{REGISTRY}:{registry.problem[0]}: {registry.problem[1]}")
    return [lane for _, lane in registry.entries if isinstance(lane, dict)]


def find_lane(root: Path, lane_id: str) -> dict:
    lanes = load_lanes(root)
    for lane in lanes:
        if lane.get("id") == lane_id:
            return lane
    known = ", ".join(str(l.get("id")) for l in lanes)
    raise DossierError(f"unknown lane {lane_id!r} (known: {known})")


def lane_argv(root: Path, lane: dict, extra=(), python: str | None = None) -> list[str]:
    """The command that runs a lane: interpreter, script, registry args, --model, then extras."""
    argv = [python or sys.executable, str(root / lane["script"]), *[str(a) for a in lane.get("args") or []]]
    extra = list(extra)
    if lane.get("model") and "--model" not in extra:
        argv += ["--model", str(lane["model"])]
    return argv + extra


def expected_server_line(lane: dict) -> re.Pattern | None:
    """The `server:` line a dry-run must print, from server.cmd/env ({port} matches any port), or the `engine:` line."""
    if isinstance(lane.get("engine"), str):  # an in-process lane prints `engine: sglang.Engine(...)`
        text = re.escape(lane["engine"]).replace(re.escape("{model}"), re.escape(str(lane.get("model", ""))))
        return re.compile(rf"^engine: {text}$", re.M)
    server = lane.get("server") or {}
    cmd = server.get("cmd") if isinstance(server, dict) else None
    if not cmd:
        return None
    env = server.get("env") or {}
    words = [f"{k}={v}" for k, v in env.items()] + shlex.split(str(cmd))
    text = re.escape(" ".join(shlex.quote(w) if "{" not in w else w for w in words))
    text = text.replace(re.escape("{port}"), r"\d+").replace(re.escape("{model}"), re.escape(str(lane.get("model", ""))))
    return re.compile(rf"^server: {text}$", re.M)


def dry_run(root: Path, lane: dict) -> tuple[bool, str]:
    """Run the lane's script with --dry-run; (ok, message). No network, no cache."""
    argv = lane_argv(root, lane, ["--dry-run"])
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=DRY_RUN_TIMEOUT, cwd=root,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return False, f"--dry-run did not finish within {DRY_RUN_TIMEOUT}s"
    return _verdict(lane, res.returncode, res.stdout, res.stderr)


def _verdict(lane: dict, code: int, stdout: str, stderr: str) -> tuple[bool, str]:
    if code != 0:
        last = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1]
        return False, f"--dry-run exited {code}: {last[:200]}"
    pattern = expected_server_line(lane)
    if pattern is not None and not pattern.search(stdout):
        key = "engine" if isinstance(lane.get("engine"), str) else "server"
        printed = next((l for l in stdout.splitlines() if l.startswith(f"{key}: ")), f"no {key} line")
        return False, f"--dry-run {key} command differs from {key}{'.cmd' if key == 'server' else ''}: {printed[:200]}"
    return True, "ok"


def _dry_run_batch(root: Path, lanes: list[dict], interpreter=None) -> list[tuple[bool, str]] | None:
    """Every dry-run in the lane interpreter (dossier.lane_interpreter); None when it broke."""
    from .lane_interpreter import ask

    results = ask(root, interpreter, "dry_runs", _dry_run_jobs(root, lanes), DRY_RUN_TIMEOUT)
    if not isinstance(results, list) or len(results) != len(lanes):
        return None  # a lane hung or broke the batch: fall back to one process per lane
    return [_verdict(lane, *r) for lane, r in zip(lanes, results)]


def _dry_run_jobs(root: Path, lanes: list[dict]) -> list[list]:
    """The lane interpreter's `dry_runs` request for these lanes: [script, argv] each."""
    return [[argv[1], argv[2:]] for argv in (lane_argv(root, lane, ["--dry-run"]) for lane in lanes)]


def _dry_run_plan(root: Path, lanes: list[dict]) -> tuple[DiskCache, dict[str, str], list[dict]]:
    """The verdict cache, each lane's cache key (its entry and its folder's scripts), and
    the lanes whose verdict is not cached."""
    cache = DiskCache(root, "lanes-dry-run")
    scripts: dict[Path, list[Path]] = {}
    keys = {}
    for lane in lanes:
        folder = (root / str(lane.get("script", ""))).parent
        if folder not in scripts:  # lanes share helper modules in their folder
            scripts[folder] = sorted(folder.glob("*.py")) if folder.is_dir() else []
        keys[lane["id"]] = content_key(sys.version, json.dumps(lane, sort_keys=True, default=str), *scripts[folder])
    return cache, keys, [lane for lane in lanes if cache.get(keys[lane["id"]]) is None]


def send_dry_runs_ahead(root: Path, lanes: list[dict], interpreter) -> bool:
    """Send `interpreter` (a LaneInterpreter) the dry-runs `dry_run_all` will ask of it for
    these lanes, when any verdict is not cached: on a cold check they then run on the other
    core while the cards load, and `dry_run_all` takes the answer. Whether it sent them."""
    _, _, todo = _dry_run_plan(root, lanes)
    if todo:
        interpreter.send_ahead("dry_runs", _dry_run_jobs(root, todo))
    return bool(todo)


def dry_run_all(root: Path, lanes: list[dict], interpreter=None) -> dict[str, tuple[bool, str]]:
    """Dry-run each lane (by id), reusing cached verdicts whose inputs are unchanged; in
    `interpreter` (a LaneInterpreter) when given, so the lane helpers are imported once."""
    cache, keys, todo = _dry_run_plan(root, lanes)
    if todo:
        verdicts = _dry_run_batch(root, todo, interpreter)
        if verdicts is None:
            with ThreadPoolExecutor(max_workers=min(8, len(todo))) as pool:
                verdicts = list(pool.map(lambda l: dry_run(root, l), todo))
        for lane, (ok, msg) in zip(todo, verdicts):
            cache.put(keys[lane["id"]], [ok, msg])
        cache.save(keep=set(keys.values()))
    return {lid: tuple(cache.get(key)) for lid, key in keys.items()}


_GPU_MEMORY = re.compile(r"\b(peak )?GPU memory\b|\bOOM\b", re.I)


def entry_flags(root: Path, entry_id: str, lane_id: str) -> list[str]:
    """Lane flags a playbook entry's `measure` asks for: --gpu-memory when it names GPU memory or OOM."""
    from .playbook import load

    entry = next((e for e in load(root).entries if e.get("id") == entry_id), None)
    if entry is None:
        raise DossierError(f"no playbook entry {entry_id!r}")
    if lane_id not in (entry.get("lanes") or []):
        raise DossierError(f"entry {entry_id} does not name lane {lane_id} (it names: {', '.join(entry.get('lanes') or [])})")
    return ["--gpu-memory"] if _GPU_MEMORY.search(str(entry.get("measure") or "")) else []

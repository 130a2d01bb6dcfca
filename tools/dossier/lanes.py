"""`dossier lanes`: list, show and run the GPU validation lanes of playbook/lanes.yaml.

Also the dry-run probe behind rule L012: every lane script must print its plan with
`--dry-run` and the server command it prints must match the registry's `server.cmd`
(or, for an in-process lane, its `engine:` line the registry's `engine`).
Probes run in parallel and are cached in .dossier-cache/ by the hash of the lane
entry and every lane script, so `dossier check` stays fast.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import yaml

from .errors import DossierError
from .fsio import read_text, write_atomic, yaml_loader

REGISTRY = "playbook/lanes.yaml"
CACHE = ".dossier-cache/lanes-dry-run.json"
DRY_RUN_TIMEOUT = 30


def load_lanes(root: Path) -> list[dict]:
    """The registry's lane entries; a clear DossierError when the file is unusable."""
    path = root / REGISTRY
    try:
        data = yaml.load(Loader=yaml_loader(), stream=read_text(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DossierError(f"{REGISTRY}:{(mark.line + 1) if mark else 1}: invalid YAML") from None
    lanes = data.get("lanes") if isinstance(data, dict) else None
    if not isinstance(lanes, list):
        raise DossierError(f"{REGISTRY}: expected a top-level 'lanes' list")
    return [lane for lane in lanes if isinstance(lane, dict)]


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


# One interpreter runs every dry-run (runpy, as __main__), saving a Python start-up per lane.
_BATCH = r"""
import contextlib, io, json, os, runpy, sys
results = []
for script, argv in json.load(sys.stdin):
    out, err, code, path = io.StringIO(), io.StringIO(), 0, list(sys.path)
    sys.argv = [script, *argv]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            err.write(exc.code)
    except BaseException as exc:
        code = 1
        err.write(f"{type(exc).__name__}: {exc}")
    finally:
        sys.path[:] = path
        folder = os.path.dirname(os.path.abspath(script))
        for name, mod in list(sys.modules.items()):  # helpers of this folder must not leak into the next
            if os.path.dirname(os.path.abspath(getattr(mod, "__file__", None) or "/")) == folder:
                del sys.modules[name]
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def _dry_run_batch(root: Path, lanes: list[dict]) -> list[tuple[bool, str]] | None:
    jobs = [[argv[1], argv[2:]] for argv in (lane_argv(root, lane, ["--dry-run"]) for lane in lanes)]
    try:
        res = subprocess.run([sys.executable, "-c", _BATCH], input=json.dumps(jobs), capture_output=True,
                             text=True, timeout=DRY_RUN_TIMEOUT, cwd=root)
        results = json.loads(res.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        return None  # a lane hung or broke the batch: fall back to one process per lane
    if len(results) != len(lanes):
        return None
    return [_verdict(lane, *r) for lane, r in zip(lanes, results)]


def _folder_digest(folder: Path) -> str:
    """Hash of every script in a lane folder: lanes share helper modules there."""
    h = hashlib.sha256(sys.version.encode())
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _fingerprint(lane: dict, folder_digest: str) -> str:
    return hashlib.sha256(json.dumps(lane, sort_keys=True, default=str).encode() + folder_digest.encode()).hexdigest()


def dry_run_all(root: Path, lanes: list[dict]) -> dict[str, tuple[bool, str]]:
    """Dry-run each lane (by id), in parallel, reusing cached verdicts whose inputs are unchanged."""
    cache_path = root / CACHE
    try:
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    folders: dict[Path, str] = {}
    keys = {}
    for lane in lanes:
        folder = (root / str(lane.get("script", ""))).parent
        if folder not in folders:
            folders[folder] = _folder_digest(folder)
        keys[lane["id"]] = _fingerprint(lane, folders[folder])
    todo = [lane for lane in lanes if cache.get(lane["id"], {}).get("key") != keys[lane["id"]]]
    if todo:
        verdicts = _dry_run_batch(root, todo)
        if verdicts is None:
            with ThreadPoolExecutor(max_workers=min(8, len(todo))) as pool:
                verdicts = list(pool.map(lambda l: dry_run(root, l), todo))
        for lane, (ok, msg) in zip(todo, verdicts):
            cache[lane["id"]] = {"key": keys[lane["id"]], "ok": ok, "message": msg}
        cache = {k: v for k, v in cache.items() if k in keys}
        try:
            write_atomic(cache_path, json.dumps(cache, indent=1, sort_keys=True))
        except OSError:
            pass  # a read-only checkout still gets the verdicts, just not the cache
    return {lid: (cache[lid]["ok"], cache[lid]["message"]) for lid in keys}


# ----------------------------------------------------------------------------- CLI

root_option = click.option("--root", type=click.Path(file_okay=False), envvar="DOSSIER_ROOT",
                           help="Knowledge-base root (folder with dossier.toml).")


def _root(root) -> Path:
    from .config import load_config

    return load_config(Path(root) if root else None).root


@click.group("lanes")
def command():
    """GPU validation lanes: list them, show one, run one."""


@command.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@root_option
def list_cmd(fmt, root):
    """One line per registered lane."""
    lanes = load_lanes(_root(root))
    if fmt == "json":
        click.echo(json.dumps(lanes, indent=1, default=str))
        return
    for lane in lanes:
        fams = ",".join(lane.get("families") or [])
        click.echo(f"{lane.get('id', '?'):<24} {lane.get('repo', '?'):<12} {fams:<40} {lane.get('title', '')}")


@command.command("show")
@click.argument("lane_id")
@root_option
def show_cmd(lane_id, root):
    """Everything the registry says about LANE_ID, and the command that runs it."""
    base = _root(root)
    lane = find_lane(base, lane_id)
    click.echo(yaml.safe_dump(lane, sort_keys=False, allow_unicode=True).rstrip())
    argv = lane_argv(base, lane, python="python")
    argv[1] = lane["script"]
    click.echo(f"run: {shlex.join(argv)} --server-url URL  (or --launch, --dry-run)")


@command.command("run", context_settings={"ignore_unknown_options": True})
@click.argument("lane_id")
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
@click.option("--python", default=None, help="Interpreter for the lane script (default: this one).")
@root_option
def run_cmd(lane_id, extra, python, root):
    """Run LANE_ID's script with its registry args; pass more after `--`
    (e.g. `dossier lanes run asr-offline -- --server-url http://127.0.0.1:30000`)."""
    base = _root(root)
    lane = find_lane(base, lane_id)
    if not (base / str(lane.get("script", ""))).is_file():
        raise DossierError(f"lane {lane_id}: script {lane.get('script')!r} not found")
    extra = [a for a in extra if a != "--"]
    if "--lane-id" not in extra and "--lane-id" not in (lane.get("args") or []):
        extra += ["--lane-id", lane_id]
    argv = lane_argv(base, lane, extra, python)
    click.echo("+ " + shlex.join(argv), err=True)
    try:
        code = subprocess.call(argv)
    except OSError as exc:
        raise DossierError(f"cannot run {argv[0]}: {exc.strerror}") from None
    sys.exit(code)

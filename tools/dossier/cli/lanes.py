"""`dossier lanes`: list, show and run the GPU validation lanes."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import click
import yaml

from ..errors import DossierError
from ..fsio import refuse_outside
from ..lanes import entry_flags, find_lane, lane_argv, load_lanes
from ._base import config_at, root_option


def _root(root) -> Path:
    return config_at(root, reading=True).root


@click.group("lanes")
def command():
    """GPU validation lanes: list them, show one, run one."""


@command.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format.")
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
@click.option("--entry", "entry_id", default=None,
              help="Playbook entry the run answers; adds what its `measure` asks for (--gpu-memory for GPU memory or OOM).")
@root_option
def run_cmd(lane_id, extra, python, entry_id, root):
    """Run LANE_ID's script with its registry args; pass more after `--`
    (e.g. `dossier lanes run asr-offline -- --server-url http://127.0.0.1:30000`)."""
    base = _root(root)
    lane = find_lane(base, lane_id)
    if entry_id:
        extra = (*extra, *[f for f in entry_flags(base, entry_id, lane_id) if f not in extra])
    script = base / str(lane.get("script", ""))
    if not script.is_file():
        raise DossierError(f"lane {lane_id}: script {lane.get('script')!r} not found")
    refuse_outside(script, base)  # the registry runs only the repository's own scripts
    extra = [a for a in extra if a != "--"]
    if "--lane-id" not in extra and "--lane-id" not in (lane.get("args") or []):
        extra += ["--lane-id", lane_id]
    argv = lane_argv(base, lane, extra, python)
    click.echo("+ " + shlex.join(argv), err=True)
    sys.exit(_run_forwarding_signals(argv))


def _run_forwarding_signals(argv: list[str]) -> int:
    """Run the lane and hand it SIGINT/SIGTERM, so it stops a server it launched before it exits.

    (subprocess.call would SIGKILL the lane on Ctrl-C, leaving its server running.)
    """
    try:
        proc = subprocess.Popen(argv)
    except OSError as exc:
        raise DossierError(f"cannot run {argv[0]}: {exc.strerror}") from None
    forward = lambda signum, _frame: proc.poll() is None and proc.send_signal(signum)  # noqa: E731
    old = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = proc.wait()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code

"""`dossier repro`: op-level reproductions and their measurement records."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..errors import DossierError
from ._base import config_at, exit_for, root_option, working


@click.group()
def repro():
    """Op-level reproductions of perf PRs (playbook/repros/) and their measurement records."""


@repro.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format.")
@root_option
def repro_list(fmt, root):
    """List the repro scripts with their subject, record state and measured speedups."""
    from .. import measurements as ms

    config = config_at(root, reading=True)
    recs = ms.records(config.root)
    rows = []
    for script in ms.scripts(config.root):
        entry = recs.get(script.subject or "")
        record = entry[1] if entry and isinstance(entry[1], dict) else None
        state = "missing" if record is None else "stale" if record.get("script_sha256") != script.sha256 else "fresh"
        rows.append({"script": script.rel, "subject": script.subject, "technique": script.technique, "state": state,
                     "record": str(entry[0].relative_to(config.root)) if entry else None,
                     "speedup": ms.headline(record) if record else None,
                     "measured": record.get("measured") if record else None})
    if fmt == "json":
        click.echo(json.dumps(rows, indent=1))
        return
    for r in rows:
        click.echo(f"{r['state']:<8} {r['subject'] or '?':<30} {r['speedup'] or '-':<14} {r['script']}")


@repro.command("record")
@click.argument("raw_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@root_option
def repro_record(raw_files, root):
    """File raw records written on the device (`script.py --out X.json`) under references/measurements/.

    Several raw files of one subject are runs of its script in separate processes: they are merged into
    one record (medians of the runs' medians, min-max across runs, noisy cases marked)."""
    from .. import measurements as ms

    config = config_at(root, reading=True)
    groups: dict[str, list[Path]] = {}
    for raw in map(Path, raw_files):
        try:
            rec = ms.load_record(raw)
            subject = rec.get("subject") if isinstance(rec, dict) else None
        except DossierError:
            subject = None
        groups.setdefault(subject if isinstance(subject, str) else str(raw), []).append(raw)
    failed = sum(not _file_runs(config, paths) for paths in groups.values())
    exit_for(failed, len(groups))


def _file_runs(config, raws: list[Path]) -> bool:
    """File one record from one raw file, or merged from several runs; say what happened in one line."""
    from .. import measurements as ms

    try:
        target = ms.file_record(config.root, raws[0]) if len(raws) == 1 else ms.file_runs(config.root, raws)
    except DossierError as exc:
        click.echo(f"dossier: error: {exc}", err=True)
        return False
    runs = f" ({len(raws)} runs merged)" if len(raws) > 1 else ""
    click.echo(f"recorded {target.relative_to(config.root)}{runs}")
    return True


@repro.command("run")
@click.argument("names", nargs=-1)
@click.option("--python", "python", default=sys.executable, show_default=True, help="Interpreter with torch (and a GPU).")
@click.option("--out-dir", type=click.Path(file_okay=False), default=None,
              help="Keep the raw records here (default: a temporary folder).")
@click.option("--quick", is_flag=True, help="Tiny shapes: a smoke run, never recorded.")
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per script run.")
@click.option("--runs", type=click.IntRange(1, 20), default=None,
              help="Separate processes per script (default 3; a record needs at least 3).")
@root_option
def repro_run(names, python, out_dir, quick, timeout, runs, root):
    """Run repro scripts here (all, or those NAMES match) and record what a GPU run measured.

    Each script runs in RUNS separate processes, one after another; the record merges them: each time
    is the median of the runs' medians, with the min-max across runs, and a case whose speedup moves
    more than 20% across runs is marked noisy."""
    import subprocess
    import tempfile

    from .. import measurements as ms

    config = config_at(root, reading=True)
    chosen = [s for s in ms.scripts(config.root) if not names or any(n in s.rel for n in names)]
    if not chosen:
        raise DossierError(f"no repro script matches {' '.join(names)}")
    work = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="dossier-repro-"))
    work.mkdir(parents=True, exist_ok=True)
    runs = 1 if quick else (runs or ms.RUNS)
    failed = 0
    for i, script in enumerate(chosen, 1):
        raws = []
        for k in range(1, runs + 1):
            raw = work / (f"{script.path.stem}.json" if runs == 1 else f"{script.path.stem}.run{k}.json")
            cmd = [python, str(script.path), "--out", str(raw)] + (["--quick"] if quick else [])
            try:
                with working(f"[{i}/{len(chosen)}] {script.rel}" + (f" run {k}/{runs}" if runs > 1 else "")):
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=config.root)
            except subprocess.TimeoutExpired:
                click.echo(f"dossier: error: {script.rel}: run {k} ran past {timeout:.0f} s", err=True)
                break
            except OSError as exc:  # --python names no interpreter: every script would fail the same way
                raise DossierError(f"cannot run {python}: {exc.strerror}") from None
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()
                click.echo(f"dossier: error: {script.rel}: run {k}: exit {proc.returncode}: {tail[-1] if tail else ''}",
                           err=True)
                break
            raws.append(raw)
        if len(raws) < runs:
            failed += 1
            continue
        if quick:
            click.echo(f"ran {script.rel} (quick: not recorded) -> {raws[0]}")
            continue
        failed += not _file_runs(config, raws)
    exit_for(failed, len(chosen))

"""Command-line entry point; each command delegates to its module."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import __version__
from .config import load_config, parse_pr_number
from .errors import DossierError


class _Group(click.Group):
    """Turn DossierError into one line on stderr and exit status 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except DossierError as exc:
            click.echo(f"dossier: error: {exc}", err=True)
            sys.exit(2)


def _config(root):
    return load_config(Path(root) if root else None)


def _prs(values) -> list[int]:
    return [parse_pr_number(v) for v in values]


root_option = click.option("--root", type=click.Path(file_okay=False), envvar="DOSSIER_ROOT",
                           help="Knowledge-base root (folder with dossier.toml).")


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="dossier")
def main():
    """Diff-grounded PR dossier for SGLang Qwen VL / Omni / ASR performance work."""


@main.command()
@click.argument("repo")
@click.argument("prs", nargs=-1, required=True)
@click.option("--clone", envvar="DOSSIER_CLONE", help="Local git clone (git source).")
@click.option("--ref", default=None, help="Branch or SHA whose first-parent history holds merges "
              "(default: the repo's pinned SHA, else HEAD).")
@click.option("--source", "source_kind", type=click.Choice(["git", "github"]), default=None,
              help="Where to read the PR (default: git when --clone is given, else github).")
@click.option("--api-url", default=None, help="GitHub API root (github source).")
@click.option("--max-age", type=float, default=None, envvar="DOSSIER_GITHUB_MAX_AGE",
              help="Seconds cached GitHub metadata (state, labels) stays fresh (github source).")
@click.option("--diff", "diff_file", type=str, default=None, help="Build the lock from a saved diff FILE or '-' (stdin).")
@click.option("--title", default=None, help="PR title (with --diff).")
@click.option("--state", default="merged", type=click.Choice(["merged", "open", "closed"]), help="PR state (with --diff).")
@click.option("--merged", "merged_date", default=None, help="Merge date YYYY-MM-DD (with --diff).")
@root_option
def fetch(repo, prs, clone, ref, source_kind, api_url, max_age, diff_file, title, state, merged_date, root):
    """Write evidence locks for PRS of REPO (e.g. `dossier fetch sglang 16366 --clone ../sglang`)."""
    from .fetch import fetch_git, lock_from_diff

    config = _config(root)
    config.repo(repo)
    numbers = _prs(prs)
    if diff_file is not None:
        if len(numbers) != 1 or not title:
            raise DossierError("--diff takes exactly one PR number and --title")
        data = sys.stdin.buffer.read() if diff_file == "-" else _read_bytes(diff_file)
        res = lock_from_diff(config, repo, numbers[0], data, title, state, merged_date)
        click.echo(f"{'wrote' if res.changed else 'unchanged'} {res.path.relative_to(config.root)}")
        return
    kind = source_kind or ("git" if clone else "github")
    if kind == "github":
        from .sources.github import fetch_github

        results = fetch_github(config, repo, numbers, api_url=api_url, max_age_s=max_age)
    else:
        if not clone:
            raise DossierError("the git source needs --clone PATH (or DOSSIER_CLONE)")
        from rich.progress import Progress

        with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
            task = progress.add_task(f"fetch {repo}", total=len(numbers))
            results = fetch_git(config, repo, numbers, clone, ref or config.repo(repo).pinned or "HEAD",
                                lambda _: progress.advance(task))
    failed = 0
    for res in results:
        if res.error:
            failed += 1
            click.echo(f"dossier: error: {repo}#{res.pr}: {res.error}", err=True)
        else:
            click.echo(f"{'wrote' if res.changed else 'unchanged'} {res.path.relative_to(config.root)}")
    if failed:
        sys.exit(1 if failed < len(results) else 2)


def rows_ref(config, repo, clone, ref) -> str:
    """The full SHA a trace reads, to tell whether stored supersession results are for it."""
    from .sources.git import History, open_clone
    from .trace import resolve_ref

    return History(open_clone(clone), resolve_ref(config, repo, ref))._resolve_ref()


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise DossierError(f"{path}: {exc.strerror}") from None


@main.command("trace")
@click.argument("families", nargs=-1)
@click.option("--all", "all_families", is_flag=True, help="Every family in dossier.toml.")
@click.option("--repo", default="sglang", show_default=True)
@click.option("--clone", envvar="DOSSIER_CLONE", required=True, help="Local git clone.")
@click.option("--ref", default=None, help="Ref to read (default: the repo's pinned SHA, else HEAD).")
@click.option("--live", is_flag=True, help="Say whether each card's added lines still stand at the ref.")
@click.option("--missing", is_flag=True, help="Only PRs with neither card nor exclusion.")
@click.option("--suggest-renames", is_flag=True, help="List renames git finds behind the families' paths "
              "that dossier.toml does not declare as former paths yet.")
@click.option("--supersede", is_flag=True, help="Compute which later PRs removed or rewrote each card's added "
              "lines and write references/supersession.json (one history walk; tens of seconds).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@root_option
def trace_cmd(families, all_families, repo, clone, ref, live, missing, suggest_renames, supersede, fmt, root):
    """List every PR that touched a family's files (former paths included), with its card or exclusion."""
    from .trace import suggest_renames as suggest, trace

    config = _config(root)
    names = list(config.families) if all_families else list(families)
    if not names:
        raise DossierError("name a family or pass --all")
    if suggest_renames:
        found = suggest(config, repo, clone, names, ref)
        if fmt == "json":
            click.echo(json.dumps(found, indent=1))
        for r in found if fmt == "text" else []:
            click.echo(f"{r['family']}: {r['old_path']} -> {r['renamed_to']} (until #{r['until']}, {r['date']})")
        return
    if supersede:
        from . import supersede as sup

        result = sup.compute(config, repo, clone, ref)
        path = sup.write(config.root, repo, result)
        states = {}
        for entry in result["cards"].values():
            states[entry["state"]] = states.get(entry["state"], 0) + 1
        click.echo(f"wrote {path.relative_to(config.root)}: {repo} at {result['ref'][:12]}: "
                   + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))
        return
    rows = trace(config, repo, clone, names, ref, live)
    if live:
        from . import supersede as sup

        stored = sup.load(config.root).get("repos", {}).get(repo)
        if stored is None or stored.get("ref") != rows_ref(config, repo, clone, ref):
            stored = sup.compute(config, repo, clone, ref)
        for r in rows:
            entry = stored["cards"].get(str(r.pr)) if r.live else None
            if entry:
                r.live["superseded_by"] = [e.get("pr") or e["commit"] for e in sup.significant(entry)]
    if missing:
        rows = [r for r in rows if r.status == "missing"]
    if fmt == "json":
        click.echo(json.dumps([r.as_dict() for r in rows], indent=1))
        return
    for r in rows:
        pr = f"#{r.pr}" if r.pr else r.commit[:9]
        extra = f" [{r.live['state']} {r.live.get('present', 0)}/{r.live.get('added', 0)}]" if r.live else ""
        if r.live and r.live.get("superseded_by"):
            extra += " superseded by " + ", ".join(f"#{p}" if isinstance(p, int) else p for p in r.live["superseded_by"])
        reason = f" ({r.reason})" if r.reason else ""
        click.echo(f"{r.date}  {pr:>7}  {r.status:<8}{extra}  {','.join(r.families):<24} {r.title[:80]}{reason}")
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("card", "excluded", "missing")}
    click.echo(f"{len(rows)} PRs: {counts['card']} with card, {counts['excluded']} excluded, {counts['missing']} missing", err=True)


@main.command()
@click.argument("repo")
@click.argument("pr")
@root_option
def new(repo, pr, root):
    """Scaffold references/cards/REPO/PR.md from its lock (never overwrites)."""
    from .new import new_card

    config = _config(root)
    path = new_card(config, repo, parse_pr_number(pr))
    click.echo(f"created {path.relative_to(config.root)}")


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text")
@click.option("--select", multiple=True, help="Only these rule codes or prefixes (repeat or comma-separate).")
@click.option("--ignore", multiple=True, help="Skip these rule codes or prefixes.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings.")
@click.option("--source", "sources", multiple=True, help="NAME=CLONE: re-verify locks against a clone.")
@root_option
def check(paths, fmt, select, ignore, exit_zero, sources, root):
    """Lint cards, locks, playbook, lanes, generated files and SKILL.md."""
    from .check import card_paths_from_args, format_findings, run_check
    from .kb import KnowledgeBase

    config = _config(root)
    src = {}
    for item in sources:
        name, sep, path = item.partition("=")
        if not sep or not path:
            raise DossierError(f"--source takes NAME=CLONE, got {item!r}")
        config.repo(name)
        src[name] = path
    ctx = KnowledgeBase(config, sources=src)
    ctx.card_paths = card_paths_from_args(ctx, paths)
    split = lambda vals: [v.strip() for x in vals for v in x.split(",") if v.strip()]  # noqa: E731
    findings = run_check(ctx, split(select), split(ignore))
    out = format_findings(findings, fmt)
    if out:
        click.echo(out)
    elif fmt == "text":
        click.echo("All checks passed.", err=True)
    sys.exit(0 if exit_zero or not findings else 1)


@main.command("rule")
@click.argument("code", required=False)
@click.option("--list", "list_all", is_flag=True, help="List every rule.")
def rule_cmd(code, list_all):
    """Explain a check rule (`dossier rule G001`) or list them all."""
    from .rules import RULES

    if list_all or not code:
        for r in sorted(RULES.values(), key=lambda r: r.code):
            click.echo(f"{r.code}  {r.name:<30} {r.summary}")
        return
    r = RULES.get(code.upper())
    if r is None:
        raise DossierError(f"unknown rule {code!r}; see `dossier rule --list`")
    click.echo(f"{r.code} ({r.name}, {r.family})\n\n{r.summary}\n\n{r.doc}".rstrip())


@main.command()
@root_option
def build(root):
    """Render references/pr-history.md and the other generated files."""
    from .build import build as do_build
    from .kb import KnowledgeBase

    config = _config(root)
    written = do_build(KnowledgeBase(config))
    for path in written:
        click.echo(f"wrote {path.relative_to(config.root)}")
    if not written:
        click.echo("generated files are up to date", err=True)


@main.group()
def repro():
    """Op-level reproductions of perf PRs (playbook/repros/) and their measurement records."""


@repro.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@root_option
def repro_list(fmt, root):
    """List the repro scripts with their subject, record state and measured speedups."""
    from . import measurements as ms

    config = _config(root)
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
    """File raw records written on the device (`script.py --out X.json`) under references/measurements/."""
    config = _config(root)
    failed = sum(not _file_one_record(config, Path(raw)) for raw in raw_files)
    if failed:
        sys.exit(1 if failed < len(raw_files) else 2)


def _file_one_record(config, raw: Path) -> bool:
    """File one raw record; say what happened in one line. False when it was refused."""
    from . import measurements as ms

    try:
        target = ms.file_record(config.root, raw)
    except DossierError as exc:
        click.echo(f"dossier: error: {exc}", err=True)
        return False
    click.echo(f"recorded {target.relative_to(config.root)}")
    return True


@repro.command("run")
@click.argument("names", nargs=-1)
@click.option("--python", "python", default=sys.executable, show_default=True, help="Interpreter with torch (and a GPU).")
@click.option("--out-dir", type=click.Path(file_okay=False), default=None,
              help="Keep the raw records here (default: a temporary folder).")
@click.option("--quick", is_flag=True, help="Tiny shapes: a smoke run, never recorded.")
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per script.")
@root_option
def repro_run(names, python, out_dir, quick, timeout, root):
    """Run repro scripts here (all, or those NAMES match) and record what a GPU run measured."""
    import subprocess
    import tempfile

    from . import measurements as ms

    config = _config(root)
    chosen = [s for s in ms.scripts(config.root) if not names or any(n in s.rel for n in names)]
    if not chosen:
        raise DossierError(f"no repro script matches {' '.join(names)}")
    work = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="dossier-repro-"))
    work.mkdir(parents=True, exist_ok=True)
    failed = 0
    for script in chosen:
        raw = work / f"{script.path.stem}.json"
        cmd = [python, str(script.path), "--out", str(raw)] + (["--quick"] if quick else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=config.root)
        except subprocess.TimeoutExpired:
            failed += 1
            click.echo(f"dossier: error: {script.rel}: ran past {timeout:.0f} s", err=True)
            continue
        if proc.returncode != 0:
            failed += 1
            tail = (proc.stderr or proc.stdout).strip().splitlines()
            click.echo(f"dossier: error: {script.rel}: exit {proc.returncode}: {tail[-1] if tail else ''}", err=True)
            continue
        if quick:
            click.echo(f"ran {script.rel} (quick: not recorded) -> {raw}")
            continue
        failed += not _file_one_record(config, raw)
    if failed:
        sys.exit(1 if failed < len(chosen) else 2)


def _register_optional():
    """Commands owned by other modules (find, radar, lanes) register themselves."""
    import importlib

    for name in ("find.command", "radar", "lanes", "trees", "link"):
        try:
            mod = importlib.import_module(f"dossier.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"dossier.{name}":
                continue
            raise
        cmd = getattr(mod, "command", None)
        if cmd is not None:
            main.add_command(cmd)


_register_optional()

if __name__ == "__main__":  # pragma: no cover
    main()

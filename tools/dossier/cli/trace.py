"""`dossier trace`: every PR that touched a family's files, with its card or exclusion."""

from __future__ import annotations

import json

import click

from ..errors import DossierError
from ._base import config_at, root_option, working


def rows_ref(config, repo, clone, ref) -> str:
    """The full SHA a trace reads, to tell whether stored supersession results are for it."""
    from ..sources.git import History, open_clone
    from ..trace import resolve_ref

    return History(open_clone(clone), resolve_ref(config, repo, ref))._resolve_ref()


@click.command("trace")
@click.argument("families", nargs=-1)  # family names, or one repo name for all its families
@click.option("--all", "all_families", is_flag=True, help="Every family in dossier.toml.")
@click.option("--repo", default="sglang", show_default=True, help="Upstream repo (a dossier.toml name) whose history to read.")
@click.option("--clone", envvar="DOSSIER_CLONE", show_envvar=True, required=True, help="Local git clone.")
@click.option("--ref", default=None, help="Ref to read (default: the repo's pinned SHA, else HEAD).")
@click.option("--live", is_flag=True, help="Say whether each card's added lines still stand at the ref.")
@click.option("--missing", is_flag=True, help="Only PRs with neither card nor exclusion.")
@click.option("--suggest-renames", is_flag=True, help="List renames git finds behind the families' paths "
              "that dossier.toml does not declare as former paths yet.")
@click.option("--supersede", is_flag=True, help="Compute which later PRs removed or rewrote each card's added "
              "lines and write references/supersession.json (one history walk; tens of seconds).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format.")
@root_option
def trace_cmd(families, all_families, repo, clone, ref, live, missing, suggest_renames, supersede, fmt, root):
    """List every PR that touched a family's files (former paths included), with its card or exclusion."""
    from ..trace import suggest_renames as suggest, trace

    config = config_at(root, reading=True)
    if len(families) == 1 and families[0] in config.repos and families[0] not in config.families:
        repo, families, all_families = families[0], (), True  # `dossier trace sglang`: every family, that repo
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
        from .. import supersede as sup

        with working(f"supersession: walking {repo} history after each card"):
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
        from .. import supersede as sup

        stored = sup.load(config.root).get("repos", {}).get(repo)
        if stored is None or stored.get("ref") != rows_ref(config, repo, clone, ref):
            stored = sup.compute(config, repo, clone, ref)
        for r in rows:
            entry = stored["cards"].get(str(r.pr)) if r.live else None
            if entry:
                r.live.update(sup.live_fields(entry))
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("card", "excluded", "missing")}
    total = len(rows)  # the summary counts every traced PR, also when only the missing ones are listed
    if missing:
        rows = [r for r in rows if r.status == "missing"]
    if fmt == "json":
        click.echo(json.dumps([r.as_dict() for r in rows], indent=1))
        return
    for r in rows:
        pr = f"#{r.pr}" if r.pr else r.commit[:9]
        extra = f" [{r.live['state']} {r.live.get('present', 0)}/{r.live.get('added', 0)}]" if r.live else ""
        if r.live and r.live.get("moved_to"):
            extra += " now at " + ", ".join(r.live["moved_to"][:2])
        if r.live and r.live.get("reverted_by"):
            extra += f" reverted by #{r.live['reverted_by']}"
        if r.live and r.live.get("superseded_by"):
            extra += " superseded by " + ", ".join(f"#{p}" if isinstance(p, int) else p for p in r.live["superseded_by"])
        reason = f" ({r.reason})" if r.reason else ""
        click.echo(f"{r.date}  {pr:>7}  {r.status:<8}{extra}  {','.join(r.families):<24} {r.title[:80]}{reason}")
    click.echo(f"{total} PRs: {counts['card']} with card, {counts['excluded']} excluded, {counts['missing']} missing", err=True)

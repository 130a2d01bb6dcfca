"""`dossier tree`: list a repo's files and symbols at a ref, or a released wheel."""

from __future__ import annotations

import click

from ..trees import list_tree
from ._base import config_at, root_option


@click.command("tree")
@click.argument("repo")
@click.option("--clone", envvar="DOSSIER_CLONE", show_envvar=True, default=None, help="Local git clone (or bare git dir).")
@click.option("--ref", default=None, help="Ref to list (default: the repo's pinned SHA, else HEAD).")
@click.option("--wheel", default=None, type=click.Path(exists=True),
              help="List a released wheel (file or unpacked directory) instead: paths, symbols, CLI flags, env vars, "
                   "config fields and each card's state in it, into REPO-release.json.")
@root_option
def command(repo, clone, ref, wheel, root):
    """Write references/trees/REPO.txt (paths) and REPO.symbols.json (def/class names)."""
    config = config_at(root)
    if wheel:
        from ..release import list_release

        out, doc = list_release(config, wheel, repo)
        states: dict[str, int] = {}
        for entry in doc["cards"].values():
            states[entry["state"]] = states.get(entry["state"], 0) + 1
        click.echo(f"wrote {out.relative_to(config.root)}: {doc['repo']} {doc['version']}, {len(doc['paths'])} paths, "
                   f"{len(doc['flags'])} flags, {len(doc['env'])} env vars"
                   + (f", {len(doc['config_fields'])} config fields" if doc.get("config_fields") else "")
                   + "; cards: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))
        return
    if not clone:
        raise click.UsageError("--clone is required (or --wheel)")
    txt, sym, size = list_tree(config, repo, clone, ref or config.repo(repo).pinned or "HEAD")
    click.echo(f"wrote {txt.relative_to(config.root)} ({size // 1024} KiB) and {sym.relative_to(config.root)}")

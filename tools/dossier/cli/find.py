"""`dossier find`: files, cards and lanes for a symptom."""

from __future__ import annotations

import json
import sys

import click

from ..find import NoMatch, format_text, load_index, search
from ..kb import KnowledgeBase
from ._base import config_at, root_option, show


@click.command("find")
@click.argument("query", nargs=-1)
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 100), help="Results to show.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text for people (coloured on a terminal), json for tools: query, files, cards, lanes, results.")
@root_option
def command(query, limit, fmt, root):
    """Rank playbook entries, cards and files for a symptom, e.g. `dossier find "Qwen3-VL video OOM"`.

    Exits 1 when nothing matches."""
    ctx = KnowledgeBase(config_at(root, reading=True))
    try:
        found = search(load_index(ctx), " ".join(query), limit)
    except NoMatch as exc:
        click.echo(f"dossier: {exc}", err=True)
        sys.exit(1)
    if fmt == "json":
        click.echo(json.dumps(found, indent=1))
    elif sys.stdout.isatty():
        show(format_text(found))
    else:
        click.echo(format_text(found))
    if not found["results"]:
        sys.exit(1)

"""`dossier find`: files, cards and lanes for a symptom."""

from __future__ import annotations

import json

import click

from ._base import config_at, root_option


@click.command("find")
@click.argument("query", nargs=-1)
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 100), help="Results to show.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@root_option
def command(query, limit, fmt, root):
    """Rank playbook entries, cards and files for a symptom, e.g. `dossier find "Qwen3-VL video OOM"`."""
    from ..find import format_text, load_index, search  # imported here: every other command starts faster
    from ..kb import KnowledgeBase

    ctx = KnowledgeBase(config_at(root))
    found = search(load_index(ctx), " ".join(query), limit)
    click.echo(json.dumps(found, indent=1) if fmt == "json" else format_text(found))

"""The `dossier find` click command; the command line imports it from here."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("find")
@click.argument("query", nargs=-1)
@click.option("--limit", default=8, show_default=True, type=click.IntRange(1, 100), help="Results to show.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--root", type=click.Path(file_okay=False), envvar="DOSSIER_ROOT", help="Knowledge-base root.")
def command(query, limit, fmt, root):
    """Rank playbook entries, cards and files for a symptom, e.g. `dossier find "Qwen3-VL video OOM"`."""
    from ..config import load_config
    from ..kb import KnowledgeBase
    from . import format_text, load_index, search

    kb = KnowledgeBase(load_config(Path(root) if root else None))
    found = search(load_index(kb), " ".join(query), limit)
    click.echo(json.dumps(found, indent=1) if fmt == "json" else format_text(found))

"""`dossier new`: scaffold a card from its lock (never overwrites)."""

from __future__ import annotations

import click

from ..config import parse_pr_number
from ._base import config_at, root_option


@click.command()
@click.argument("repo")
@click.argument("pr")
@root_option
def new(repo, pr, root):
    """Scaffold references/cards/REPO/PR.md from its lock (never overwrites)."""
    from ..new import new_card

    config = config_at(root)
    path = new_card(config, repo, parse_pr_number(pr))
    click.echo(f"created {path.relative_to(config.root)}")

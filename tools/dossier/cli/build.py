"""`dossier build`: render the generated files."""

from __future__ import annotations

import click

from ._base import config_at, root_option


@click.command()
@root_option
def build(root):
    """Render references/pr-history.md and the other generated files."""
    from ..build import build as do_build
    from ..kb import KnowledgeBase

    config = config_at(root)
    written = do_build(KnowledgeBase(config))
    for path in written:
        click.echo(f"wrote {path.relative_to(config.root)}")
    if not written:
        click.echo("generated files are up to date", err=True)

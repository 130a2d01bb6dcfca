"""`dossier link`: cite each card in the playbook entries its `symptoms:` name."""

from __future__ import annotations

import click

from ..errors import DossierError
from ..kb import KnowledgeBase
from ..link import link, missing_links
from ._base import config_at, root_option


@click.command("link")
@click.option("--check", "check_only", is_flag=True, help="Only list what is missing; exit 1 if anything is.")
@root_option
def command(check_only, root):
    """Cite each card in the playbook entries named by its `symptoms:` (newest first)."""
    from ..readable import require_readable_inputs

    ctx = KnowledgeBase(config_at(root))
    require_readable_inputs(ctx, "link stopped, nothing written" if not check_only else "cannot tell what is cited")
    if check_only:
        missing = missing_links(ctx)
        for rel, number, entry, add in missing:
            click.echo(f"{rel}:{number}: {entry} does not cite {', '.join(add)}")
        raise SystemExit(1 if missing else 0)
    try:
        changes = link(ctx)
    except (AttributeError, ValueError) as exc:  # a hand-edited line that no longer parses
        raise DossierError(f"cannot update the playbook: {exc}") from None
    for line in changes:
        click.echo(line)
    if not changes:
        click.echo("every card is cited by the entries it names", err=True)

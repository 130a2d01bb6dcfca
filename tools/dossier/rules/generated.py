"""Generated-file rules (B): what `dossier build` writes must be up to date."""

from __future__ import annotations

from .base import Finding, rule


@rule("B001", "generated-stale", scope="project")
def generated_stale(ctx):
    """A generated file differs from what `dossier build` would write now.

    `references/pr-history.md`, `references/playbook.md` and the other generated
    pages are rendered from cards, locks and the playbook. Run `dossier build`.
    """
    from ..build import stale_outputs

    for rel, current, text in stale_outputs(ctx):
        if current is None:
            yield Finding(rel, 1, 1, "B001", "generated file is missing; run `dossier build`")
        else:
            a, b = current.split("\n"), text.split("\n")
            line = next((i for i, (x, y) in enumerate(zip(a, b), 1) if x != y), min(len(a), len(b)) + 1)
            yield Finding(rel, line, 1, "B001", "generated file is out of date; run `dossier build`")

"""Generated-file rules (B): what `dossier build` writes must be up to date."""

from __future__ import annotations

from .base import Finding, rule


@rule("B001", "generated-stale", scope="project")
def generated_stale(ctx):
    """A generated file differs from what `dossier build` would write now.

    `references/pr-history.md`, `references/playbook.md` and the other generated
    pages are rendered from cards, locks and the playbook. Run `dossier build`.
    """
    from ..build import generated_outputs

    for rel, text in generated_outputs(ctx).items():
        path = ctx.root / rel
        if not path.exists():
            yield Finding(rel, 1, 1, "B001", "generated file is missing; run `dossier build`")
            continue
        current = path.read_text(encoding="utf-8", errors="replace")
        if current != text:
            a, b = current.split("\n"), text.split("\n")
            line = next((i for i, (x, y) in enumerate(zip(a, b), 1) if x != y), min(len(a), len(b)) + 1)
            yield Finding(rel, line, 1, "B001", "generated file is out of date; run `dossier build`")

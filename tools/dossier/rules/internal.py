"""X000: the finding a crashing rule turns into (see check._run); it never fires on its own."""

from __future__ import annotations

from .base import FAMILIES, rule

FAMILIES.setdefault("X", "internal")


@rule("X000", "internal-error", scope="project")
def internal_error(ctx):
    """A rule crashed on this file; the message names the rule and the exception.

    `dossier check` reports a bug in one rule as this finding instead of a traceback,
    so the other rules still run. Please report it with the file that triggered it.
    """
    return iter(())

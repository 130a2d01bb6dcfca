"""Whether every input can be read into its shape, before a command writes from them.

`build`, `link` and `find` stop here when one cannot (a card that is not UTF-8, a lock that
does not load, a playbook file that is not YAML): output rendered from what could be read
would silently drop the rest. The reasons are the findings `check` gives for the same
inputs, read from the same KnowledgeBase queries, so this module sits below the rules and
the commands that call it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import DossierError
from .findings import Finding

if TYPE_CHECKING:
    from .kb import KnowledgeBase


class BrokenInputs(DossierError):
    """Some input cannot be read; the command stops before writing anything."""

    def __init__(self, findings: list[Finding], action: str):
        first = findings[0]
        more = f" (and {len(findings) - 1} more; run `dossier check`)" if len(findings) > 1 else ""
        super().__init__(f"{first.path}:{first.line}:{first.col}: {first.code} {first.message}{more}; {action}")
        self.findings = findings


def unreadable_inputs(ctx: KnowledgeBase) -> list[Finding]:
    """Inputs that cannot be read into their shape, as the findings `check` gives for them.

    A card that is not UTF-8, has no YAML mapping or a field of the wrong type (S001, S002);
    a lock that exists but does not load (S008); a playbook file, lane registry, radar or
    measurement record that does not parse (L007, L010, R001, M001). Missing optional parts
    (an entry without `measure`, a card not yet fetched) are for `check`, not this.
    """
    out = [Finding(ctx.rel(p), 1, 1, "S001", why) for p, why in ctx.all_loaded[1]]
    for card in ctx.all_cards:
        if card.meta_error:
            out.append(Finding(ctx.rel(card.path), 1, 1, "S001", card.meta_error))
        out += [Finding(ctx.rel(card.path), line, 1, "S002", message)
                for line, message, wrong_type in card.field_problems() if wrong_type]
    for path in sorted(ctx.config.evidence_dir.glob("*/*.json")):
        if path.stem.isdigit():
            _, error = ctx.lock_for(path.parent.name, int(path.stem))
            if error:
                out.append(Finding(ctx.rel(path), 1, 1, "S008", error.split(": ", 1)[-1]))
    out += [Finding(p.path, p.line, 1, "L007", p.message) for p in ctx.playbook.problems if p.unreadable]
    if ctx.lane_registry.problem:
        out.append(Finding("playbook/lanes.yaml", ctx.lane_registry.problem[0], 1, "L010", ctx.lane_registry.problem[1]))
    radar = ctx.radar
    if radar is not None and radar.problems and not radar.items:
        out += [Finding(ctx.rel(radar.path), line, 1, "R001", msg) for line, msg in radar.problems]
    out += [Finding(ctx.rel(path), 1, 1, "M001", err) for path, _, err in ctx.measurement_records.values() if err]
    return sorted(set(out))


def require_readable_inputs(ctx: KnowledgeBase, action: str = "nothing written") -> None:
    """Raise BrokenInputs when an input cannot be read: `build`, `link` and `find` call this first,
    since output rendered from what could be read would silently drop the rest (a radar of
    "0 open PRs", a playbook missing a file, "every card is cited")."""
    found = unreadable_inputs(ctx)
    if found:
        raise BrokenInputs(found, action)

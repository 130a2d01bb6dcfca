"""A card whose lines are gone or reverted at the pin says so (L035), as L015 asks of the playbook."""

from __future__ import annotations

import re

from .base import Finding, rule

_UNSAID_STATES = ("gone", "reverted")


def _named(body: str) -> set[int]:
    return {int(n) for n in re.findall(r"#(\d+)", body)}


@rule("L035", "card-superseded-unsaid")
def card_superseded_unsaid(ctx, card):
    """A card whose added lines are gone (or reverted) at the pinned SHA does not say by which PR.

    `references/supersession.json` knows when a later PR removed or reverted what a card's
    PR added; the card's body must name that PR (`#N`) and say what replaced it, if
    anything, so a reader is not sent to follow-up work on code that no longer exists.
    For a gone card any of its significant superseders will do; for a reverted one, the
    revert.
    """
    from .. import supersede as sup

    if card.meta is None:
        return
    info = sup.for_card(ctx.root, card.cid, ctx.supersession)
    if not info or info.get("state") not in _UNSAID_STATES:
        return
    revert = info.get("reverted_by")
    if isinstance(revert, dict):
        revert = revert.get("pr")
    wanted = [revert] if isinstance(revert, int) else [e["pr"] for e in sup.significant(info) if e.get("pr")]
    if not wanted:
        return
    body = card.text[card.text.find("\n---", 3) + 4:] if card.text.startswith("---") else card.text
    if _named(body) & set(wanted):
        return
    state = info["state"]
    names = ", ".join(f"#{n}" for n in wanted[:4])
    yield Finding(ctx.rel(card.path), card.body_start or 1, 1, "L035",
                  f"its lines are {state} at the pinned SHA ({'reverted by' if state == 'reverted' else 'superseded by'} "
                  f"{names}); say so in the card and what replaced them")

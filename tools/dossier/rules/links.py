"""Link rules (L) for cards: lanes and playbook entries a card names must exist."""

from __future__ import annotations

from .base import Finding, rule


@rule("L001", "card-unknown-lane")
def card_unknown_lane(ctx, card):
    """The card names a lane that `playbook/lanes.yaml` does not register."""
    meta = card.meta or {}
    for lane in meta.get("lanes") or []:
        if lane not in ctx.lanes:
            yield Finding(ctx.rel(card.path), card.key_line("lanes"), 1, "L001", f"unknown lane '{lane}'")


@rule("L002", "card-unknown-symptom")
def card_unknown_symptom(ctx, card):
    """The card names a playbook symptom id that no playbook entry has."""
    meta = card.meta or {}
    for sid in meta.get("symptoms") or []:
        if sid not in ctx.playbook_ids:
            yield Finding(ctx.rel(card.path), card.key_line("symptoms"), 1, "L002", f"unknown playbook symptom '{sid}'")

"""Prose rules (P) across cards: a judgement section is written for its own PR, so its
sentences and sections should not recur in other cards with only names changed.

The sentences, shingles and indexes come from `ctx.prose` (see dossier._prose).
"""

from __future__ import annotations

from .._prose import JUDGEMENT
from .base import Finding, rule


@rule("P006", "templated-sentence")
def templated_sentence(ctx, card):
    """A sentence is shared with another card with only paths, code or numbers changed.

    Judgement sections are written per PR. A sentence that fits any card says nothing
    about this one; say what this diff did.
    """
    prose = ctx.prose
    index = prose.templated
    me = ctx.card_id(card)
    entry = prose.card(card)
    if not prose.may_share(me, entry):
        return  # most cards: no sentence to read out
    for _, number, raw, norm in entry.sentences:
        ids = index.get(norm, ())
        # Most shapes belong to this card alone: no set to subtract, nothing to sort.
        if len(ids) > 1 or ids and me not in ids:
            others = sorted(ids - {me})
            yield Finding(ctx.rel(card.path), number, 1, "P006",
                          f"templated sentence also in {', '.join(others[:3])}: {raw[:60]!r}")


@rule("P007", "near-copy-section")
def near_copy_section(ctx, card):
    """A judgement section is a near-copy of the same section in another card.

    Fires when half or more of the section's four-word shingles (paths, code and
    numbers blanked) also appear in one other card's same section.
    """
    copies = ctx.prose.near_copies
    me = ctx.card_id(card)
    for name in JUDGEMENT:
        other = copies.get((me, name))
        if other:
            yield Finding(ctx.rel(card.path), card.sections[name].line, 1, "P007",
                          f"'{name}' is a near-copy of {other}")

"""Each card's "Measured on H200" block: the text it should have given the records, and writing it.

The block is rendered from the card's measurement record (`measurements.render_block`);
`build` writes it and M003 reports a card whose block is missing, stale or orphaned.
"""

from __future__ import annotations

from pathlib import Path

from .errors import DossierError
from .fsio import read_text, write_atomic
from .measurements import BLOCK, BLOCK_START, problems, records, render_block


def card_with_block(text: str, record: dict | None) -> str:
    """The card text with its measurement block replaced, added at the end, or removed."""
    body = BLOCK.sub("\n", text).rstrip("\n") + "\n"
    return body + "\n" + render_block(record) if record else body


def card_blocks(root: Path, cards=None, found: dict | None = None) -> dict[Path, str]:
    """Card path -> expected text, for every card whose block is missing, stale or orphaned.

    `cards` ((path, text) of every card file, text None where it is to be read here) and
    `found` (what `records(root)` returns) are what the caller has read already: `check`
    has every card and record. Without them, the cards folder is listed and read.
    """
    found = records(root) if found is None else found
    recs = {subj: rec for subj, (_, rec, err) in found.items() if rec and not err and not problems(rec)}
    if cards is None:
        cards = [(path, None) for path in (root / "references" / "cards").glob("*/*.md")]
    out = {}
    for card, text in cards:
        if text is None:
            try:
                text = read_text(card)
            except DossierError:
                continue
        rec = recs.get(f"{card.parent.name}#{card.stem}")
        if rec is None and BLOCK_START not in text:
            continue
        expected = card_with_block(text, rec)
        if expected != text:
            out[card] = expected
    # In path order (Paths sort by their parts; sorting by them skips Path's slow comparisons).
    return dict(sorted(out.items(), key=lambda item: item[0].parts))


def write_card_blocks(root: Path) -> list[Path]:
    written = []
    for path, text in card_blocks(root).items():
        write_atomic(path, text)
        written.append(path)
    return written

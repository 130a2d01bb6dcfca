"""The prose machinery behind P006/P007: sentences, shapes, near-copies."""

from __future__ import annotations

from pathlib import Path

from dossier import _prose
from dossier.cards import parse_card

CARD = """---
repo: sglang
pr: {pr}
---

# title

## Motivation

Each image tensor travelled to the GPU on its own before the vision tower ran,
so a request carrying {n} screenshots paid {n} tiny transfers.

Short line here.

```python
this fenced sentence has more than six words in it
```

~~~text
this tilde fenced sentence has more than six words too
~~~

## Key implementation

- `mm_utils.embed` now keeps every host tensor in one pinned buffer per request.
- The vision tower reads the buffer once and splits it back into images on device.

## Reviewed files

Notes outside the judgement sections never count as sentences at all.
"""


def card(tmp_path: Path, pr: int, text: str | None = None):
    path = tmp_path / "references/cards/sglang" / f"{pr}.md"
    return parse_card(path, text if text is not None else CARD.format(pr=pr, n="eight"))


class StandInKB:
    """What Prose reads from the knowledge base: every card, and card ids."""

    def __init__(self, root: Path, cards):
        self.root, self.all_cards = root, cards

    def card_id(self, c) -> str:
        return f"{c.path.parent.name}/{c.path.stem}"


def test_sentences_join_wrapped_lines_and_skip_fences_short_lines_and_other_sections(tmp_path):
    got = _prose.sentences(card(tmp_path, 42))
    assert [(name, line) for name, line, _, _ in got] == [
        ("Motivation", 10), ("Key implementation", 25), ("Key implementation", 26)]
    raw = got[0][2]
    assert raw.startswith("Each image tensor travelled") and raw.endswith("eight tiny transfers.")
    assert "\n" not in raw
    # Code spans, identifiers with dots or underscores, and numbers blank to one token.
    shape = _prose.normalize_sentence("Set `--foo` in mm_utils.py to 3.5x over 12 runs.")
    assert shape == "set x in x to x over x runs."


def test_near_copies_needs_half_the_smaller_section_shared():
    shared = {f"w{i} a b c" for i in range(10)}
    got = _prose.near_copies({
        "s/1": {"Motivation": shared},
        "s/2": {"Motivation": shared | {f"z{i} a b c" for i in range(8)}},  # 10 of 18 shared
        "s/3": {"Motivation": {f"q{i} a b c" for i in range(5)} | set(sorted(shared)[:5])},  # 5 of 10: enough
        "s/4": {"Motivation": {f"r{i} a b c" for i in range(6)} | set(sorted(shared)[:4])},  # 4 of 10: not
        "s/5": {"Validation": shared},  # same words, another section: not compared
        "s/6": {"Motivation": set(sorted(shared)[:2])},  # too few shingles to judge
    })
    assert got == {("s/1", "Motivation"): "s/2", ("s/2", "Motivation"): "s/1", ("s/3", "Motivation"): "s/1"}


def test_templated_index_and_near_copy_across_cards(tmp_path):
    # Numbers blank out, words do not: 8 and 12 make one shape, eight and twelve two.
    a, b = card(tmp_path, 42, CARD.format(pr=42, n="8")), card(tmp_path, 43, CARD.format(pr=43, n="12"))
    c = card(tmp_path, 44, CARD.format(pr=44, n="twelve"))
    prose = _prose.Prose(StandInKB(tmp_path, [a, b, c]))
    assert prose.templated[prose.card(a).sentences[0][3]] == {"sglang/42", "sglang/43"}
    assert prose.templated[prose.card(c).sentences[0][3]] == {"sglang/44"}
    assert prose.near_copies[("sglang/42", "Key implementation")] == "sglang/43"
    assert prose.near_copies[("sglang/44", "Key implementation")] == "sglang/42"


def test_prose_is_computed_per_run_and_never_written_to_disk(tmp_path):
    a, b = card(tmp_path, 42), card(tmp_path, 43, CARD.format(pr=43, n="twelve"))
    prose = _prose.Prose(StandInKB(tmp_path, [a, b]))
    assert prose.near_copies and prose.templated
    assert prose.card(a) is prose.card(card(tmp_path, 42))  # same text: computed once
    assert not (tmp_path / ".dossier-cache").exists()

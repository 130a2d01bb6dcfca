"""The fast paths `dossier check` takes must answer exactly what the slow ones did."""

from __future__ import annotations

import random
import re
import zlib

import pytest

from dossier import _prose
from dossier.cards import FENCE, Section, is_fence
from dossier.rules.base import Caseless
from dossier.rules.phrases import _PLACEHOLDER_FAST, _fast_placeholder


def _strings(alphabet: str, count: int = 20000, longest: int = 14, seed: int = 7):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(count)]


def test_fence_test_equals_the_fence_regex():
    lines = ["```", "  ```python", "~~~", "\t~~~ x", "`` `", "x```", "\u00a0```", "\u2003~~~", "```\r", "~~", ""]
    lines += _strings(" \t`~ax\u00a0\r")
    for line in lines:
        assert is_fence(line) == bool(FENCE.match(line)), repr(line)


def test_shape_words_equal_blanking_every_sentence():
    def slow(text):
        return _prose._BLANKABLE.sub(" x ", text).lower().split()

    samples = ["Ends here.", "Ends here. Next", "path a/b.py ok", "see foo_ bar", "v1.2 and 3x", "e.g. this", "a.-b",
               "`code` span", "#12 done", "\u0663 arabic digit", "x./ y", "trailing _"]
    for text in samples + _strings("ab_./-`1 #\t.\u00e9\u0663x"):
        assert _prose._shape_words(text) == slow(text), repr(text)


@pytest.mark.parametrize("source", [r"\bshould\s+(?:\w+\s+){0,3}?drop\w*", r"(?<![a-z])npu|ascend", r"TODO|<fill[^>]*>",
                                    r"\d\s*(?:ms\b|GiB\b|%)"])
def test_caseless_finds_what_the_pattern_finds(source):
    pattern, fast = re.compile(source, re.IGNORECASE), Caseless(source)
    texts = ["It should DROP", "Ascend NPU", "todo: x", "<FILL in>", "12 MS", "3 gib", "ſhould drop", "\u212a"]
    texts += _strings("shouldrpaNPUcend TODO<>fil12mgib%\u017f\u212a")
    for text in texts:
        slow, quick = pattern.search(text), fast.search(text)
        assert fast.found(text) == (slow is not None), repr(text)
        assert (quick.group(0) if quick else None) == (slow.group(0) if slow else None), repr(text)


def test_caseless_refuses_what_lower_casing_would_change():
    with pytest.raises(ValueError):
        Caseless(r"\S+")


def test_placeholder_first_test_equals_its_regex():
    texts = ["todo", "a\n...\nb", "  ...  ", "x...y", "<!-- dossier: fill", "<!--dossier:", "<!-- other", "fill me later",
             "fill in later", "fill it later", "<fill", "lorem ipsum", "write me", "tbd", "xxx"]
    for text in texts + _strings("todbx.\n <!-fil:ers"):
        assert _fast_placeholder(text) == bool(_PLACEHOLDER_FAST.search(text)), repr(text)


def test_near_copies_pick_the_first_card_that_shares_half():
    shared = {f"s{i}" for i in range(6)}
    sections = {
        "sglang/1": {"Motivation": shared | {"a1", "a2"}},
        "sglang/2": {"Motivation": shared | {"b1", "b2", "b3", "b4", "b5", "b6", "b7"}},
        "sglang/3": {"Motivation": {"s0", "c1", "c2", "c3"}},  # one shared shingle: never a copy
        "sglang/4": {"Motivation": shared},
    }
    found = _prose.near_copies(sections)
    assert found[("sglang/1", "Motivation")] == "sglang/2"
    assert found[("sglang/4", "Motivation")] == "sglang/1"
    assert ("sglang/3", "Motivation") not in found


_PROSE_ALPHABET = "aZx _./-`1 #\t,;:()'\u00e9\u0663\u03a3\u00a0\0"


def test_blanking_equals_the_blanking_regex():
    # The plain-prose alternative may only cover text where _BLANKABLE cannot start a match.
    samples = ["Set `--foo` in mm_utils.py to 3.5x over 12 runs.", "done. 12 more", "a -1 b", "word.x next", "see # 12",
               "ends with a.", "well-known base-vs.head", "x  \t 7", "e.g. this", "(a) [b] {c}: d!", "\u0391\u03a3 b"]
    for text in samples + _strings(_PROSE_ALPHABET, longest=24):
        assert _prose._blanked(text) == _prose._BLANKABLE.sub(" x ", text), repr(text)


def _slow_shape(part):
    return _prose._BLANKABLE.sub(" x ", part).lower()


def test_shapes_of_a_section_blanked_at_once_or_part_by_part(monkeypatch):
    calls = []
    real = _prose._blanked
    monkeypatch.setattr(_prose, "_blanked", lambda text: calls.append(text) or real(text))
    together = ["Set `a` to 3.", "Then `b.py` ran \u03a3.", "No code here at all"]
    assert _prose._shapes(together) == [_slow_shape(p) for p in together]
    assert len(calls) == 1  # one pass over the joined parts
    # A code span cut by the sentence split would run across the NUL; a NUL in a part would
    # add one: either way each part is blanked on its own.
    for parts in (["Keep `a.", "b` apart 2."], ["a\0b 1.", "c `d` e"]):
        calls.clear()
        assert _prose._shapes(parts) == [_slow_shape(p) for p in parts]
        assert calls[-len(parts):] == parts
    rng = random.Random(3)
    for text in _strings(_PROSE_ALPHABET + "..", count=3000, longest=40):
        parts = [p for p in text.split(".") if p] or [text]
        rng.shuffle(parts)
        assert _prose._shapes(parts) == [_slow_shape(p) for p in parts], repr(parts)


def test_sentence_split_equals_the_look_behind_split():
    old = re.compile(r"(?<=[.!?;:])\s+")
    samples = ["One. Two!  Three?\tFour; five: six", "a.b. c", ". . .", ""]
    for text in samples + _strings("a .!?;:\t\u00a0\n", longest=20):
        assert _prose._SENTENCE_END.split(text) == old.split(text), repr(text)


def _old_paragraphs(section):
    """The paragraph rules read line by line, as before the prose-line shortcut."""
    fenced, start, buf = False, 0, []
    for number, line in section.body:
        stripped = line.strip()
        if is_fence(line):
            fenced = not fenced
            stripped = ""
        if fenced:
            continue
        bullet = stripped[:2] in ("- ", "* ") or stripped[:3].rstrip(".").isdigit()
        if not stripped or stripped.startswith(("#", "<!--")) or bullet:
            if buf:
                yield start, buf
            buf = []
            if not stripped or stripped.startswith(("#", "<!--")):
                continue
            stripped = stripped[2:] if stripped[:2] in ("- ", "* ") else stripped
        if not buf:
            start = number
        buf.append(stripped)
    if buf:
        yield start, buf


def test_paragraphs_equal_the_line_by_line_rules():
    kinds = ["plain prose", "  more prose ", "", "```", " ~~~ x", "`code` first", "~ tilde", "# heading",
             "<!-- c -->", "<b>", "- item", "-dash", "* star", "*emph*", "1. one", "12. twelve", "123 x",
             "\u0663 digit", "..5", "\u00a0"]
    rng = random.Random(5)
    for _ in range(3000):
        section = Section("Motivation", 1, [(i, rng.choice(kinds)) for i in range(rng.randint(0, 12))])
        assert list(_prose.paragraphs(section)) == list(_old_paragraphs(section)), section.body


def test_sampled_shingles_equal_the_joined_string_sample():
    rng = random.Random(9)
    vocabulary = ["x", "the", "buffer", "gpu", "\u00e9t\u00e9", "\u0663", "a.b", "`"]
    for _ in range(500):
        words = [rng.choice(vocabulary) for _ in range(rng.randint(0, 30))]
        grams = map(" ".join, zip(*(words[i:] for i in range(4))))
        want = {g.encode() for g in grams if not zlib.crc32(g.encode()) & 3}
        assert _prose.sampled_shingles([w.encode() for w in words]) == want


def _old_read(card):
    """How the sentences and shingle words were read before sections were cut and blanked
    a card at a time: paragraph by paragraph, sentence by sentence."""
    from bisect import bisect_right
    from itertools import accumulate

    out, streams = [], {}
    for name in _prose.JUDGEMENT:
        sec = card.sections.get(name)
        if sec is None:
            continue
        paras = []
        for start, lines in _prose.paragraphs(sec):
            text = " ".join(lines)
            paras.append((start, lines, text, _prose._SENTENCE_END.split(text)))
        shapes = iter(_prose._shapes([part for *_, parts in paras for part in parts]))
        stream = []
        for start, lines, text, parts in paras:
            offsets, cursor = None, 0
            for part in parts:
                words = next(shapes).split()
                if len(lines) > 1:
                    idx = text.find(part, cursor)
                    cursor = idx + len(part)
                if len(words) - words.count("x") >= _prose.MIN_SENTENCE_WORDS:
                    line = start
                    if len(lines) > 1 and idx > 0:
                        offsets = offsets or [0, *accumulate(len(l) + 1 for l in lines[:-1])]
                        line += bisect_right(offsets, idx) - 1
                    out.append((name, line, part.strip(), " ".join(words)))
                    stream += words
        if stream:
            streams[name] = stream
    return out, streams


_SENTENCE_BITS = [
    "The copy moves to the GPU once per batch and prefill waits.", "See `mm_utils.py` for 12 runs:",
    "a `code span. That runs` on;", "one lone ` here", "\u03a3 ends in sigma \u03a3", "x x x x x x x",
    "Numbers like 3.5x and #12 blank out; paths a/b.py too!", "e.g. this one", "with\0a NUL", "and\1 a one",
    "Short.", "- a bullet item with enough words to count here.", "  wrapped line goes on", "```", "~~~ x",
    "# heading", "<!-- note -->", "12. numbered item that is long enough to count", "",
    "a non-breaking\u00a0space\u2003and an em space split words as str does", "\x1cinfo separator",
]


def _prose_card(rng: random.Random, number: int):
    from pathlib import Path

    from dossier.cards import parse_card

    parts = [f"---\nrepo: sglang\npr: {number}\n---\n\n# T\n"]
    for name in rng.sample(list(_prose.JUDGEMENT) + ["Reviewed files"], rng.randint(0, 5)):
        parts.append(f"\n## {name}\n\n")
        for _ in range(rng.randint(0, 10)):
            line = " ".join(rng.choice(_SENTENCE_BITS) for _ in range(rng.randint(1, 4)))
            parts.append((line if rng.random() < 0.97 else line.replace("\0", "").replace("\1", "")) + "\n")
    text = "".join(parts)
    if rng.random() < 0.8:  # most cards hold no separator, as real ones
        text = text.replace("\0", "").replace("\1", "")
    return parse_card(Path(f"references/cards/sglang/{number}.md"), text)


def test_card_prose_equals_reading_sentence_by_sentence(monkeypatch):
    calls = []
    real = _prose._shapes_apart
    monkeypatch.setattr(_prose, "_shapes_apart", lambda parts: calls.append(1) or real(parts))
    rng = random.Random(17)
    taken = {"card at once": 0, "some section alone": 0, "separator in card": 0,
             "words as UTF-8": 0, "words as str": 0}
    for number in range(3000):
        card = _prose_card(rng, number)
        calls.clear()
        entry = _prose.CardProse(card)
        if "\0" in card.text or "\1" in card.text:
            taken["separator in card"] += 1
        else:
            taken["some section alone" if calls else "card at once"] += 1
        as_str = any(map(card.text.__contains__, "\0\1" + _prose._NOT_BYTES_SPACE))
        taken["words as str" if as_str else "words as UTF-8"] += 1
        want_sentences, want_words = _old_read(card)
        assert entry.shapes == [s[3] for s in want_sentences], card.text
        assert entry.sentences == want_sentences, card.text
        # Either way split, the words are the UTF-8 of str.split()'s.
        assert entry._words == {name: [w.encode() for w in words] for name, words in want_words.items()}, card.text
    assert min(taken.values()) > 200, taken


def _old_near_copies(sections):
    """near_copies as it was: every shared shingle's postings counted for each section."""
    from collections import Counter, defaultdict
    from itertools import chain

    ids = sorted(sections)
    by_name = defaultdict(dict)
    for number, cid in enumerate(ids):
        for name, sh in sections[cid].items():
            if len(sh) >= _prose.MIN_SHINGLES:
                by_name[name][number] = sh
    result = {}
    for name, kept in by_name.items():
        seen, shared = set(), set()
        for sh in kept.values():
            shared |= sh & seen
            seen |= sh
        postings, common = defaultdict(list), {}
        for number, sh in kept.items():
            mine = sh & shared
            if len(mine) >= 2:
                common[number] = mine
                for s in mine:
                    postings[s].append(number)
        for number, mine in common.items():
            overlap = Counter(chain.from_iterable(map(postings.__getitem__, mine)))
            size = len(kept[number])
            passing = (o for o, n in overlap.items() if n > 1 and 2 * n >= min(size, len(kept[o])) and o != number)
            other = min(passing, default=None)
            if other is not None:
                result[(ids[number], name)] = ids[other]
    return result


def test_near_copies_equal_counting_every_shared_shingle():
    rng = random.Random(23)
    found = 0
    for _ in range(400):
        universe = [f"s{i}" for i in range(rng.randint(4, 40))]
        sections = {}
        for card in rng.sample(range(1000), rng.randint(1, 30)):
            names = rng.sample(["Motivation", "Risk"], rng.randint(0, 2))
            sections[f"sglang/{card}"] = {name: set(rng.sample(universe, rng.randint(0, min(14, len(universe)))))
                                          for name in names}
        want = _old_near_copies(sections)
        assert _prose.near_copies(sections) == want
        found += len(want)
    assert found > 1000


def test_templated_sentence_reads_sentences_only_where_a_shape_is_shared(monkeypatch):
    from dossier.rules import RULES

    rng = random.Random(29)
    cards = [_prose_card(rng, number) for number in range(400)]

    class KB:
        all_cards = cards

        def __init__(self):
            self.prose = _prose.Prose(self)

        def card_id(self, c):
            return f"{c.path.parent.name}/{c.path.stem}"

        def rel(self, path):
            return str(path)

    def findings():
        kb = KB()
        return [list(RULES["P006"].func(kb, c)) for c in cards]

    kb = KB()
    may = [kb.prose.may_share(kb.card_id(c), kb.prose.card(c)) for c in cards]
    assert 50 < sum(may) < len(cards) - 50  # both ways, often
    quick = findings()
    monkeypatch.setattr(_prose.Prose, "may_share", lambda self, cid, entry: True)
    assert findings() == quick
    assert sum(map(bool, quick)) > 50

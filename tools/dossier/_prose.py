"""Prose machinery behind the similarity rules: the sentences of each card's judgement
sections, their shapes with names blanked, sampled shingles, and the cross-card views
built from them (which sentence shapes recur, which sections nearly copy another).

`Prose` holds them for one check; `KnowledgeBase.prose` builds it once. Per-card data
persists in .dossier-cache/prose.json keyed by the card's text, as ruff caches per-file
results: an unchanged card costs a lookup.
"""

from __future__ import annotations

import re
import zlib
from bisect import bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from . import cards as _cards_module
from .cards import is_fence
from .cache import DiskCache, content_key

JUDGEMENT = ("Motivation", "Key implementation", "Validation", "Risk")
MIN_SHINGLES = 3  # sampled shingles a section needs before it can be called a copy
MIN_SENTENCE_WORDS = 6  # words left after blanking for a sentence to count
SHINGLE_WORDS = 4

_BLANKABLE = re.compile(r"`[^`]*`|#?\s*\b\d[\d.,x%]*\b|\b[\w.-]*[/_.][\w./-]*\b")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_BLANK = "x"

Sentence = tuple[str, int, str, str]  # (section, line, raw text, normalized shape)


def normalize_sentence(sentence: str) -> str:
    """Sentence shape with code, paths, identifiers and numbers blanked to one token."""
    return " ".join(_shape_words(sentence))


# What any _BLANKABLE match needs: a backtick, a digit, or a `/_.` that a word character
# follows (through `[\w./-]`, as the path alternative's closing \b demands); a sentence
# without one (a full stop before a space does not count) is its own shape, lower-cased.
_MAY_BLANK = re.compile(r"[`\d_]|[/.][\w./-]*\w")


def _shape_words(sentence: str) -> list[str]:
    if _MAY_BLANK.search(sentence) is None:
        return sentence.lower().split()
    return _BLANKABLE.sub(" x ", sentence).lower().split()


def paragraphs(section):
    """(first line number, lines) of each prose paragraph or list item, fences skipped,
    so a sentence wrapped over several lines is still one sentence."""
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


def sentences(card) -> list[Sentence]:
    """Every judgement-section sentence with enough words left after blanking."""
    out = []
    for name in JUDGEMENT:
        sec = card.sections.get(name)
        if sec is None:
            continue
        for start, lines in paragraphs(sec):
            text = " ".join(lines)
            offsets, pos = [], 0  # where each line starts in `text`: line start + i
            for l in lines:
                offsets.append(pos)
                pos += len(l) + 1
            cursor = 0
            for part in _SENTENCE_END.split(text):
                idx = text.find(part, cursor)
                cursor = idx + len(part)
                words = _shape_words(part)
                if len(words) - words.count(_BLANK) >= MIN_SENTENCE_WORDS:
                    line = start + bisect_right(offsets, max(idx, 0)) - 1
                    out.append((name, line, part.strip(), " ".join(words)))
    return out


def shingles(sents: list[Sentence], k: int = SHINGLE_WORDS) -> dict[str, set[str]]:
    """k-word shingles per judgement section, from the already-normalized sentences."""
    words: dict[str, list[str]] = defaultdict(list)
    for name, _, _, norm in sents:
        words[name].extend(norm.split())
    # Keep a deterministic quarter of the shingles (by CRC): overlap ratios survive the
    # sampling and the inverted index in near_copies shrinks fourfold.
    out = {}
    crc = zlib.crc32
    for name, w in words.items():
        out[name] = {g for g in map(" ".join, zip(*(w[i:] for i in range(k)))) if not crc(g.encode()) & 3}
    return out


def near_copies(sections: dict[str, dict[str, set[str]]]) -> dict[tuple[str, str], str]:
    """(card id, section) -> id of a card whose same section it nearly copies, given
    card id -> section -> shingles: half or more of the smaller shingle set is shared.

    An inverted index from shingle to sections keeps this linear in practice:
    only sections that share shingles are ever compared.
    """
    kept = {}
    postings: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))  # section -> shingle -> ids
    for cid, per_section in sections.items():
        for name, sh in per_section.items():
            if len(sh) >= MIN_SHINGLES:
                kept[(cid, name)] = sh
                by_shingle = postings[name]
                for s in sh:
                    by_shingle[s].append(cid)
    result = {}
    chain = __import__("itertools").chain.from_iterable
    for (cid, name), sh in kept.items():
        overlap = Counter(chain(map(postings[name].__getitem__, sh)))  # each id is once per shingle list
        # a pass needs n >= 0.5 * min(sizes) >= 0.5 * MIN_SHINGLES, so n == 1 never passes
        for other in sorted(o for o, n in overlap.items() if n >= 2 and o != cid):
            if overlap[other] >= 0.5 * min(len(sh), len(kept[(other, name)])):
                result[(cid, name)] = other
                break
    return result


@dataclass(frozen=True)
class CardProse:
    sentences: list[Sentence]
    shingles: dict[str, set[str]]

    def to_json(self) -> dict:
        return {"sentences": self.sentences, "shingles": {k: sorted(v) for k, v in self.shingles.items()}}

    @classmethod
    def from_json(cls, data) -> CardProse:
        return cls([tuple(s) for s in data["sentences"]], {k: set(v) for k, v in data["shingles"].items()})


class Prose:
    """The prose views of one knowledge base, each computed on first use."""

    def __init__(self, kb):
        self._kb = kb
        self._disk = DiskCache(kb.root, "prose")
        self._by_text: dict[str, CardProse] = {}
        self._used: set[str] = set()

    @cached_property
    def _salt(self) -> str:
        # The cached data depends on this module and on how cards split into sections.
        return content_key("prose", Path(__file__), Path(_cards_module.__file__))

    def card(self, card) -> CardProse:
        """Sentences and shingles of one card: from this run, the disk cache, or computed."""
        hit = self._by_text.get(card.text)
        if hit is not None:
            return hit
        key = content_key(self._salt, card.text)
        self._used.add(key)
        stored = self._disk.get(key)
        try:
            hit = CardProse.from_json(stored) if stored is not None else None
        except (KeyError, TypeError, AttributeError):
            hit = None  # an entry in an older or damaged layout: compute it again
        if hit is None:
            sents = sentences(card)
            hit = CardProse(sents, shingles(sents))
            self._disk.put(key, hit.to_json())
        self._by_text[card.text] = hit
        return hit

    @cached_property
    def _all(self) -> dict[str, CardProse]:
        """Card id -> prose of every card in the tree; saves the disk cache once it is complete."""
        out = {self._kb.card_id(c): self.card(c) for c in self._kb.all_cards}
        self._disk.save(keep=self._used)
        return out

    @cached_property
    def templated(self) -> dict[str, set[str]]:
        """Normalized sentence -> ids of the cards that contain it."""
        index: dict[str, set[str]] = defaultdict(set)
        for cid, entry in self._all.items():
            for _, _, _, norm in entry.sentences:
                index[norm].add(cid)
        return index

    @cached_property
    def near_copies(self) -> dict[tuple[str, str], str]:
        """(card id, section) -> id of the card whose same section it nearly copies."""
        return near_copies({cid: entry.shingles for cid, entry in self._all.items()})

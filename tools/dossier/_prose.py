"""Prose machinery behind the similarity rules: the sentences of each card's judgement
sections, their shapes with names blanked, sampled shingles, and the cross-card views
built from them (which sentence shapes recur, which sections nearly copy another).

`Prose` holds them for one check; `KnowledgeBase.prose` builds it once. Nothing is kept
on disk: computing a card's prose costs about what reading it back from a JSON cache did,
and a cold run no longer writes that cache.
"""

from __future__ import annotations

import re
import zlib
from bisect import bisect_right
from collections import defaultdict
from functools import cached_property
from itertools import accumulate, chain, compress, repeat
from operator import and_

from .cards import is_fence

JUDGEMENT = ("Motivation", "Key implementation", "Validation", "Risk")
MIN_SHINGLES = 3  # sampled shingles a section needs before it can be called a copy
MIN_SENTENCE_WORDS = 6  # words left after blanking for a sentence to count
SHINGLE_WORDS = 4

_BLANKABLE = re.compile(r"`[^`]*`|#?\s*\b\d[\d.,x%]*\b|\b[\w.-]*[/_.][\w./-]*\b")
# Splits where `(?<=[.!?;:])\s+` does; led by `\s`, the regex engine skips to the next
# whitespace in C instead of trying the look-behind at every character.
_SENTENCE_END = re.compile(r"\s(?<=[.!?;:]\s)\s*")
_BLANK = "x"

Sentence = tuple[str, int, str, str]  # (section, line, raw text, normalized shape)


def normalize_sentence(sentence: str) -> str:
    """Sentence shape with code, paths, identifiers and numbers blanked to one token."""
    return " ".join(_shape_words(sentence))


# What any _BLANKABLE match needs: a backtick, a digit, or a `/_.` that a word character
# follows (through `[\w./-]`, as the path alternative's closing \b demands); a sentence
# without one (a full stop before a space does not count) is its own shape, lower-cased.
_MAY_BLANK = re.compile(r"[`\d_]|[/.][\w./-]*\w")

# Plain prose where no _BLANKABLE match can start, matched first so the engine crosses it in
# one step instead of trying _BLANKABLE at every character (which costs most of the time):
# ASCII letters, hyphens, spaces and punctuation that no alternative starts with, ending on
# such punctuation, a space not followed by whitespace or a digit, or a full stop not
# followed by a path character. Inside it, a word ends before a space, that punctuation or
# that full stop, so the path alternative finds no `/_.` to take (the full stop leaves no
# word boundary after it); a space is not followed by a number; nothing is a backtick,
# `#`, digit, `_` or `/`. The text it covers comes back unchanged, as from _BLANKABLE.sub.
_COLD_PUNCT = r"""!"$%&'()*+,:;<=>?@\[\\\]^{|}~"""
_COLD = rf"[a-zA-Z\- {_COLD_PUNCT}]*(?:[{_COLD_PUNCT}]| (?![\s\d])|\.(?![\w./-]))"
_COLD_OR_BLANKABLE = re.compile(rf"({_COLD})|{_BLANKABLE.pattern}")
_AS_BLANK = {None: f" {_BLANK} "}  # split() gives None for the group of a _BLANKABLE match


def _blanked(text: str) -> str:
    """`_BLANKABLE.sub(" x ", text)`: the split keeps plain prose and what lies between
    matches, and marks each _BLANKABLE match with None, which becomes " x "."""
    parts = _COLD_OR_BLANKABLE.split(text)
    return "".join(map(_AS_BLANK.get, parts, parts))


def _shape_words(sentence: str) -> list[str]:
    if _MAY_BLANK.search(sentence) is None:
        return sentence.lower().split()
    return _blanked(sentence).lower().split()


def paragraphs(section):
    """(first line number, lines) of each prose paragraph or list item, fences skipped,
    so a sentence wrapped over several lines is still one sentence."""
    fenced, start, buf = False, 0, []
    for number, line in section.body:
        stripped = line.strip()
        first = stripped[:1]
        # A fence line starts with ` or ~ once stripped (strip and is_fence's lstrip agree
        # on the left), so is_fence is asked only about those lines.
        if first in ("`", "~") and is_fence(line):
            fenced = not fenced
            if fenced:
                continue
            stripped = first = ""
        elif fenced:
            continue
        # Most lines are prose that goes on with the paragraph: no marker to look for.
        if first and first not in "#<-*" and not first.isdigit():
            if not buf:
                start = number
            buf.append(stripped)
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


def _shapes(parts: list[str]) -> list[str]:
    """Each part blanked and lower-cased, as `_shape_words` reads it before splitting.

    The parts are blanked as one text joined by NULs when that gives the same: no part
    holds a NUL, and no code span runs from one part into the next (it would swallow the
    NUL between them). A NUL is neither a word character nor whitespace, so `\\b`, the
    number alternative's `\\s*` and lower() treat it as the end of the text."""
    if len(parts) > 1:
        joined = "\0".join(parts)
        if joined.count("\0") == len(parts) - 1:
            shapes = _blanked(joined).lower().split("\0")
            if len(shapes) == len(parts):
                return shapes
            return _shapes_apart(parts)
    return [_shape_alone(p) for p in parts]


def _shape_alone(part: str) -> str:
    """One part blanked (when anything in it can be) and lower-cased."""
    return (_blanked(part) if _MAY_BLANK.search(part) else part).lower()


def _shapes_apart(parts: list[str]) -> list[str]:
    """_shapes of parts (none holding a NUL) that a code span runs across when joined.

    Every backtick starts or ends a code span where one can (no other match takes one), so
    in a part with an even number of backticks each span closes inside the part: those
    parts are still blanked as one text, and only the others one by one."""
    odd = [part.count("`") & 1 for part in parts]
    even = [part for part, o in zip(parts, odd) if not o]
    together = iter(_blanked("\0".join(even)).lower().split("\0") if even else ())
    return [_shape_alone(part) if o else next(together) for part, o in zip(parts, odd)]


def _cut(paras) -> list[tuple[int, list[str], str, list[str]]]:
    """(first line, lines, text, sentences) of each paragraph: the sentences are its text
    cut where a sentence ends, as every reading of them cuts it."""
    out = []
    for start, lines in paras:
        text = " ".join(lines)
        out.append((start, lines, text, _SENTENCE_END.split(text)))
    return out


# A card's judgement sections are shaped as one text: sentences (and paragraphs) apart by
# NUL, sections by \x01. Neither is a word character, whitespace or cased, so blanking and
# lower() read each as the end of a text (see _shapes), and no sentence split crosses one.
_SENTENCE_SEP, _SECTION_SEP = "\0", "\1"


def _card_shapes(card, sections: list[list[tuple[int, list[str]]]]) -> list[list[str]]:
    """Per section (its paragraphs), the shape of each of its sentences, in order.

    The sections are cut, blanked and lower-cased as one text (a few C calls per card, not
    several per sentence) where that gives what shaping each sentence alone gives: the
    card holds no separator, and no code span runs across one (it would swallow it: the
    counts tell). A section a code span runs through (or every section, when one runs
    from a section into the next) is shaped as _shapes does then (_shapes_apart)."""
    if _SENTENCE_SEP in card.text or _SECTION_SEP in card.text:
        return [_shapes([part for *_, parts in _cut(paras) for part in parts]) for paras in sections]
    cut = _SENTENCE_END.sub(_SENTENCE_SEP, _SECTION_SEP.join([
        _SENTENCE_SEP.join([" ".join(lines) for _, lines in paras]) for paras in sections]))
    shaped = _blanked(cut).lower()
    cut_sections = cut.split(_SECTION_SEP)
    if shaped.count(_SECTION_SEP) != len(cut_sections) - 1:
        return [_shapes_apart(section.split(_SENTENCE_SEP)) for section in cut_sections]
    out = []
    for section, blanked in zip(cut_sections, shaped.split(_SECTION_SEP)):
        shapes = blanked.split(_SENTENCE_SEP)
        if len(shapes) != section.count(_SENTENCE_SEP) + 1:  # a code span swallowed a NUL
            shapes = _shapes_apart(section.split(_SENTENCE_SEP))
        out.append(shapes)
    return out


# The whitespace str.split() splits on but bytes.split() does not (after encoding): where a
# card's shapes hold none, both give the same words, the second as the UTF-8 the shingle
# sample hashes, so no shingle is encoded on its own. Looked for with `in`, a C scan each
# (none at all for a character wider than the text's), far faster than a regex search.
_NOT_BYTES_SPACE = "\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007" \
                   "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _utf8_words(shapes: list[str]) -> list[list[bytes]]:
    """The words of each shape (none holding a NUL or _NOT_BYTES_SPACE), in UTF-8: one
    encode and split per section, then bytes.split() per sentence."""
    return [shape.split() for shape in _SENTENCE_SEP.join(shapes).encode().split(b"\0")]


class CardProse:
    """One card's prose: the shapes of its judgement-section sentences with enough words
    (what P006 indexes), those sentences with line and raw text once asked for (P006 asks
    only on cards with a shape another card shares), and per section its sampled shingles
    once asked for (P006 alone never needs them)."""

    def __init__(self, card):
        self._names = [name for name in JUDGEMENT if name in card.sections]
        self._paras = [list(paragraphs(card.sections[name])) for name in self._names]
        self._keeps: list[list[bool]] = []  # per section: which sentences have enough words
        self.shapes: list[str] = []
        self._words: dict[str, list[bytes]] = {}  # section -> the UTF-8 words of its kept sentences, in order
        sections = _card_shapes(card, self._paras)
        # A card holding a separator or such a space (hardly any) has its words split as str.
        as_str = (_SENTENCE_SEP in card.text or _SECTION_SEP in card.text
                  or any(map(card.text.__contains__, _NOT_BYTES_SPACE)))
        blank = _BLANK if as_str else _BLANK.encode()
        for name, shapes in zip(self._names, sections):
            words = [shape.split() for shape in shapes] if as_str else _utf8_words(shapes)
            keep = [len(w) - w.count(blank) >= MIN_SENTENCE_WORDS for w in words]
            kept = list(compress(words, keep))
            if kept:
                if as_str:
                    self.shapes += map(" ".join, kept)
                    self._words[name] = list(map(str.encode, chain.from_iterable(kept)))
                else:
                    self.shapes += map(bytes.decode, map(b" ".join, kept))
                    self._words[name] = list(chain.from_iterable(kept))
            self._keeps.append(keep)

    @cached_property
    def sentences(self) -> list[Sentence]:
        """(section, line, raw text, shape) of each sentence in `shapes`."""
        out, shapes = [], iter(self.shapes)
        for name, paras, keep in zip(self._names, self._paras, self._keeps):
            kept = iter(keep)
            for start, lines, text, parts in _cut(paras):
                offsets = None  # where each line starts in `text`, needed only when it wraps
                cursor = 0
                for part in parts:
                    if len(lines) > 1:
                        idx = text.find(part, cursor)
                        cursor = idx + len(part)
                    if next(kept):
                        line = start
                        if len(lines) > 1 and idx > 0:
                            offsets = offsets or [0, *accumulate(len(l) + 1 for l in lines[:-1])]
                            line += bisect_right(offsets, idx) - 1
                        out.append((name, line, part.strip(), next(shapes)))
        return out

    @cached_property
    def shingles(self) -> dict[str, set[bytes]]:
        words, self._words = self._words, None  # cut once: the word lists are not needed again
        return {name: sampled_shingles(w) for name, w in words.items()}


def sentences(card) -> list[Sentence]:
    """Every judgement-section sentence with enough words left after blanking."""
    return CardProse(card).sentences


_KEPT = bytes([1, 0, 0, 0]) * 64  # CRC-32 mod 4 -> whether the shingle is kept


def sampled_shingles(words: list[bytes], k: int = SHINGLE_WORDS) -> set[bytes]:
    """The section's k-word shingles (the UTF-8 of the words joined by spaces) whose CRC-32
    is 0 mod 4.

    Keeping a deterministic quarter lets overlap ratios survive while the inverted index
    in near_copies shrinks fourfold. Each step maps over all shingles in C; the CRCs mod 4
    go into one bytes object, which one translate turns into keep flags."""
    grams = list(map(b" ".join, zip(*(words[i:] for i in range(k)))))
    crcs = map(zlib.crc32, grams)
    return set(compress(grams, bytes(map(and_, crcs, repeat(3))).translate(_KEPT)))


def near_copies(sections: dict[str, dict[str, set]]) -> dict[tuple[str, str], str]:
    """(card id, section) -> id of a card whose same section it nearly copies, given
    card id -> section -> shingles: half or more of the smaller shingle set is shared.

    A pair passes when the smaller set S shares at least need = ceil(|S| / 2) of its
    shingles with the other (need >= 2, as |S| >= MIN_SHINGLES). Then of S's shingles
    that some other section holds, any `that many - need + 1` meet the other set, so
    only the rarest ones are looked up in the inverted index (prefix filtering): the
    common shingles, whose long postings cost most, never are. Each candidate pair is
    then counted exactly. Cards are numbered in id order: the numbers sort like the ids,
    and hash faster.
    """
    ids = sorted(sections)
    by_name: dict[str, dict[int, set]] = defaultdict(dict)  # section -> card number -> shingles
    for number, cid in enumerate(ids):
        for name, sh in sections[cid].items():
            if len(sh) >= MIN_SHINGLES:
                by_name[name][number] = sh
    result = {}
    for name, kept in by_name.items():
        seen: set = set()
        shared: set = set()  # shingles two or more of these sections hold
        for sh in kept.values():  # set operations in C, on the hashes the sets keep
            shared |= sh & seen
            seen |= sh
        postings: dict = defaultdict(list)  # shared shingle -> numbers of the sections holding it
        mine = {}
        for number, sh in kept.items():
            mine[number] = common = sh & shared
            for s in common:
                postings[s].append(number)
        holders = {s: len(p) for s, p in postings.items()}
        rarest = []
        for number, common in mine.items():
            sh = kept[number]
            need = (len(sh) + 1) // 2
            if len(common) >= need:  # else no section holds half of this one
                rarest.append((number, sh, sorted(common, key=holders.__getitem__)[:len(common) - need + 1]))
        copies: dict[int, set[int]] = defaultdict(set)  # number -> numbers of the sections it passes with
        for number, sh, probe in rarest:
            size = len(sh)
            for other in set(chain.from_iterable(map(postings.__getitem__, probe))):
                # each pair is counted from its smaller side (both sides when sizes tie)
                if other != number and len(kept[other]) >= size and 2 * len(sh & kept[other]) >= size:
                    copies[number].add(other)
                    copies[other].add(number)
        for number, others in copies.items():
            result[(ids[number], name)] = ids[min(others)]
    return result


class Prose:
    """The prose views of one knowledge base, each computed on first use."""

    def __init__(self, kb):
        self._kb = kb
        self._by_text: dict[str, CardProse] = {}

    def card(self, card) -> CardProse:
        """Sentences and shingles of one card, computed once per text in this run."""
        hit = self._by_text.get(card.text)
        if hit is None:
            hit = self._by_text[card.text] = CardProse(card)
        return hit

    @cached_property
    def _all(self) -> dict[str, CardProse]:
        """Card id -> prose of every card in the tree."""
        return {self._kb.card_id(c): self.card(c) for c in self._kb.all_cards}

    @cached_property
    def templated(self) -> dict[str, set[str]]:
        """Normalized sentence -> ids of the cards that contain it."""
        index: dict[str, set[str]] = defaultdict(set)
        for cid, entry in self._all.items():
            for norm in entry.shapes:
                index[norm].add(cid)
        return index

    @cached_property
    def _shared(self) -> set[str]:
        """The normalized sentences two or more cards contain."""
        return {norm for norm, ids in self.templated.items() if len(ids) > 1}

    def may_share(self, cid: str, entry: CardProse) -> bool:
        """Whether a card (its id and prose) may have a sentence that `templated` gives
        another card for. When the index holds this very prose under this id, only its
        shapes in two or more cards can: one set test in C, no sentence read."""
        return self._all.get(cid) is not entry or not self._shared.isdisjoint(entry.shapes)

    @cached_property
    def near_copies(self) -> dict[tuple[str, str], str]:
        """(card id, section) -> id of the card whose same section it nearly copies."""
        return near_copies({cid: entry.shingles for cid, entry in self._all.items()})

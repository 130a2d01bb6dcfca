"""Prose rules (P): judgement sections must say something concrete and their own."""

from __future__ import annotations

import re
import zlib
from collections import defaultdict
from pathlib import Path

from .base import Finding, rule

MIN_SHINGLES = 3  # sampled shingles a section needs before it can be called a copy
JUDGEMENT = ("Motivation", "Key implementation", "Validation", "Risk")
MIN_WORDS = {"Motivation": 25, "Key implementation": 25, "Validation": 15}
_PLACEHOLDER = re.compile(
    r"\b(TODO|TBD|FIXME|XXX|lorem ipsum|WRITE ME|fill (?:me|in) later)\b|<fill[^>]*>|<!--\s*dossier:|^\s*\.\.\.\s*$",
    re.IGNORECASE | re.MULTILINE,
)
# Case-sensitive twin over lower-cased text: a quick "anything at all?" test per card.
_PLACEHOLDER_FAST = re.compile(
    r"todo|tbd|fixme|xxx|lorem ipsum|write me|fill (?:me|in) later|<fill|<!--\s*dossier:|^\s*\.\.\.\s*$",
    re.MULTILINE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]+")
_STOP = set(
    "the a an and or of to in for on with by from this that these those is are was were be been it its as at "
    "into via pr pull request adds add added support supports fix fixes fixed use uses using when which".split()
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;:])\s+|\n\s*[-*]\s+|\n{2,}")
_CODE_SPAN = re.compile(r"`[^`]*`")
_PATHLIKE = re.compile(r"\b[\w.-]*[/_.][\w./-]*\b")
_NUMBER = re.compile(r"\b\d[\d.,x%]*\b")
_CMD = re.compile(r"`[^`]*(?:python|pytest|bash|sglang|dossier|curl|--[a-z])[^`]*`|```", re.IGNORECASE)
_TEST_REF = re.compile(r"(?:test_\w+|tests?/[\w/.-]+|\w+_test\.py|unittest|pytest)")


def _f(ctx, card, line, code, msg, col=1):
    return Finding(ctx.rel(card.path), line, col, code, msg)


def _content_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP]


def _line_of(section, needle: str) -> int:
    for number, text in section.body:
        if needle and needle in text:
            return number
    return section.line


@rule("P001", "placeholder")
def placeholder(ctx, card):
    """A placeholder or an unfilled scaffold comment is left in the card.

    `dossier new` leaves `<!-- dossier: ... -->` comments and empty sections; a card
    is done when none of them remain. TODO, TBD, FIXME, XXX and lorem ipsum also fire.
    """
    if not _PLACEHOLDER_FAST.search(card.text.lower()):
        return  # the common case: one scan of the whole card
    fenced = False
    for number, line in enumerate(card.text.split("\n"), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        m = _PLACEHOLDER.search(line)
        if m:
            yield _f(ctx, card, number, "P001", f"placeholder left in card: {m.group(0).strip()!r}", m.start() + 1)


@rule("P002", "motivation-restates-title")
def motivation_restates_title(ctx, card):
    """The motivation restates the title instead of saying why the PR existed.

    Fires when the motivation adds fewer than 12 content words beyond the title's own.
    Say what was slow or broken, for whom, and how the author showed it.
    """
    sec = card.sections.get("Motivation")
    if sec is None or card.meta is None:
        return
    title_words = set(_content_words(str(card.meta.get("title", ""))))
    new = [w for w in _content_words(sec.prose()) if w not in title_words]
    if len(set(new)) < 12:
        yield _f(ctx, card, sec.line, "P002", "motivation restates the title; say why the PR existed")


@rule("P003", "thin-section")
def thin_section(ctx, card):
    """A judgement section is too short to be useful (Motivation and Key implementation
    need 25 words, Validation 15)."""
    for name, minimum in MIN_WORDS.items():
        sec = card.sections.get(name)
        if sec is None or not sec.text:
            continue
        words = len(_WORD.findall(_CODE_SPAN.sub(" x ", sec.prose())))
        if words < minimum:
            yield _f(ctx, card, sec.line, "P003", f"'{name}' has {words} words (min {minimum})")


def _diff_vocabulary(lock: dict) -> set[str]:
    vocab = set()
    for f in lock.get("files", []):
        for path in (f["path"], f.get("old_path") or ""):
            if not path:
                continue
            name = path.rsplit("/", 1)[-1]
            vocab.update({path.lower(), name.lower(), name.rsplit(".", 1)[0].lower()})
        vocab.update(s.lower() for s in f.get("symbols", []))
    return {v for v in vocab if len(v) > 2}


@rule("P004", "implementation-names-nothing")
def implementation_names_nothing(ctx, card):
    """Key implementation names no file, function, class or constant from the diff.

    The section must point into the change: a touched file, or a symbol the lock
    recorded (functions and classes in hunk headers and in added/removed definitions).
    """
    sec = card.sections.get("Key implementation")
    lock = ctx.card_lock(card)
    if sec is None or lock is None or not sec.text:
        return
    vocab = _diff_vocabulary(lock)
    text = sec.text.lower()
    tokens = set(re.findall(r"[a-z0-9_./-]+", text))
    if not (tokens & vocab or any(v in text for v in vocab if "/" in v)):
        yield _f(ctx, card, sec.line, "P004", "implementation names nothing from the diff (no touched file or symbol)")


@rule("P005", "validation-names-nothing")
def validation_names_nothing(ctx, card):
    """Validation names no lane, test or command.

    Name a lane from `playbook/lanes.yaml`, a test file or test function, or a command
    in backticks (`python -m ...`, `pytest ...`, a server flag like `--mm-attention-backend`).
    """
    sec = card.sections.get("Validation")
    if sec is None or not sec.text:
        return
    text = sec.text
    lanes = set(ctx.lanes) | set((card.meta or {}).get("lanes") or [])
    if any(re.search(rf"(?<![\w-]){re.escape(l)}(?![\w-])", text) for l in lanes):
        return
    if _TEST_REF.search(text) or _CMD.search(text):
        return
    yield _f(ctx, card, sec.line, "P005", "validation names no lane, test or command")


_BLANKABLE = re.compile(r"`[^`]*`|#?\s*\b\d[\d.,x%]*\b|\b[\w.-]*[/_.][\w./-]*\b")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_BLANK = "x"


def normalize_sentence(sentence: str) -> str:
    """Sentence shape with code, paths, identifiers and numbers blanked to one token."""
    return " ".join(_BLANKABLE.sub(" x ", sentence).lower().split())


def _sentences(card):
    cached = card.__dict__.get("_sentences")
    if cached is None:
        cached = card.__dict__["_sentences"] = list(_iter_sentences(card))
    return cached


_CACHE_FILE = ".dossier-cache/prose.json"


def _prose_cache(ctx) -> dict:
    """Per-card sentences and shingles from earlier runs, keyed by card text and this
    module's source, as ruff caches per-file results: unchanged cards cost a dict lookup."""
    cache = getattr(ctx, "_prose_cache", None)
    if cache is None:
        import hashlib
        import json

        version = hashlib.sha1(Path(__file__).read_bytes()).hexdigest()[:12]
        try:
            data = json.loads((ctx.root / _CACHE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if data.get("version") != version:
            data = {"version": version, "cards": {}}
        cache = ctx._prose_cache = {"data": data, "dirty": False, "used": set()}
    return cache


def _card_key(card) -> str:
    import hashlib

    return hashlib.sha1(card.text.encode("utf-8", "surrogateescape")).hexdigest()


def _load_cached(ctx, card) -> None:
    """Fill card's sentence and shingle caches from the disk cache, or compute and record them."""
    if "_sentences" in card.__dict__ and "_shingles" in card.__dict__:
        return
    cache = _prose_cache(ctx)
    key = _card_key(card)
    cache["used"].add(key)
    hit = cache["data"]["cards"].get(key)
    if hit is not None:
        card.__dict__["_sentences"] = [tuple(x) for x in hit["sentences"]]
        card.__dict__["_shingles"] = {k: set(v) for k, v in hit["shingles"].items()}
        return
    card.__dict__["_shingles"] = _compute_shingles(card)
    cache["data"]["cards"][key] = {"sentences": _sentences(card),
                                   "shingles": {k: sorted(v) for k, v in card.__dict__["_shingles"].items()}}
    cache["dirty"] = True


def _save_cache(ctx) -> None:
    cache = _prose_cache(ctx)
    if not cache["dirty"] or ctx.card_paths is not None:
        return
    import json

    from ..fsio import write_atomic

    data = cache["data"]
    data["cards"] = {k: v for k, v in data["cards"].items() if k in cache["used"]}
    try:
        write_atomic(ctx.root / _CACHE_FILE, json.dumps(data, separators=(",", ":")))
    except OSError:
        pass  # a read-only checkout still gets a correct, just slower, check
    cache["dirty"] = False


def _paragraphs(section):
    """(first line number, text) of each prose paragraph or list item, fences skipped,
    so a sentence wrapped over several lines is still one sentence."""
    fenced, start, buf = False, 0, []
    for number, line in section.body:
        stripped = line.strip()
        if stripped.startswith("```"):
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


def _iter_sentences(card):
    for name in JUDGEMENT:
        sec = card.sections.get(name)
        if sec is None:
            continue
        for start, lines in _paragraphs(sec):
            text = " ".join(lines)
            offsets, pos = [], 0
            for i, l in enumerate(lines):
                offsets.append((pos, start + i))
                pos += len(l) + 1
            cursor = 0
            for part in _SENTENCE_END.split(text):
                idx = text.find(part, cursor)
                cursor = idx + len(part)
                norm = normalize_sentence(part)
                if sum(1 for w in norm.split() if w != _BLANK) >= 6:
                    line = max(n for off, n in offsets if off <= max(idx, 0))
                    yield name, line, part.strip(), norm


def _templated_index(ctx):
    cached = getattr(ctx, "_templated", None)
    if cached is None:
        index = defaultdict(set)
        for other in ctx.all_cards:
            _load_cached(ctx, other)
            for _, _, _, norm in _sentences(other):
                index[norm].add(ctx.card_id(other))
        cached = ctx._templated = index
    return cached


@rule("P006", "templated-sentence")
def templated_sentence(ctx, card):
    """A sentence is shared with another card with only paths, code or numbers changed.

    Judgement sections are written per PR. A sentence that fits any card says nothing
    about this one; say what this diff did.
    """
    index = _templated_index(ctx)
    me = ctx.card_id(card)
    for _, number, raw, norm in _sentences(card):
        others = sorted(index.get(norm, set()) - {me})
        if others:
            yield _f(ctx, card, number, "P006", f"templated sentence also in {', '.join(others[:3])}: {raw[:60]!r}")


def _section_shingles(card) -> dict[str, set]:
    cached = card.__dict__.get("_shingles")
    if cached is None:
        cached = card.__dict__["_shingles"] = _compute_shingles(card)
    return cached


def _compute_shingles(card, k: int = 4) -> dict[str, set]:
    """Four-word shingles per judgement section, from the already-normalized sentences."""
    words: dict[str, list[str]] = defaultdict(list)
    for name, _, _, norm in _sentences(card):
        words[name].extend(norm.split())
    # Keep a deterministic quarter of the shingles (by CRC): overlap ratios survive the
    # sampling and the inverted index below shrinks fourfold.
    out = {}
    for name, w in words.items():
        grams = {" ".join(w[i:i + k]) for i in range(max(0, len(w) - k + 1))}
        out[name] = {g for g in grams if not zlib.crc32(g.encode()) & 3}
    return out


def _near_copies(ctx) -> dict[tuple[str, str], str]:
    """(card id, section) -> id of a card whose same section it nearly copies.

    An inverted index from shingle to sections keeps this linear in practice:
    only sections that share shingles are ever compared.
    """
    cached = getattr(ctx, "_near_copies", None)
    if cached is not None:
        return cached
    shingles = {}
    postings: dict[tuple, list] = defaultdict(list)
    for other in ctx.all_cards:
        cid = ctx.card_id(other)
        _load_cached(ctx, other)
        for name, sh in _section_shingles(other).items():
            if len(sh) >= MIN_SHINGLES:
                shingles[(cid, name)] = sh
                for s in sh:
                    postings[(name, s)].append(cid)
    result = {}
    for (cid, name), sh in shingles.items():
        overlap: dict[str, int] = defaultdict(int)
        for s in sh:
            for other in postings[(name, s)]:
                if other != cid:
                    overlap[other] += 1
        for other, n in sorted(overlap.items()):
            if n >= 0.5 * min(len(sh), len(shingles[(other, name)])):
                result[(cid, name)] = other
                break
    ctx._near_copies = result
    _save_cache(ctx)
    return result


@rule("P007", "near-copy-section")
def near_copy_section(ctx, card):
    """A judgement section is a near-copy of the same section in another card.

    Fires when half or more of the section's four-word shingles (paths, code and
    numbers blanked) also appear in one other card's same section.
    """
    copies = _near_copies(ctx)
    me = ctx.card_id(card)
    for name in JUDGEMENT:
        other = copies.get((me, name))
        if other:
            yield _f(ctx, card, card.sections[name].line, "P007", f"'{name}' is a near-copy of {other}")


_STOCK = re.compile(
    r"\b(?:this (?:pr|change|patch) (?:improves|optimizes|adds support for|fixes (?:a|the) bug)"
    r"|improves? (?:the )?performance(?: significantly| a lot)?[.;]"
    r"|as (?:the|its) title (?:says|suggests)|see the (?:pr|diff) for details|refer to the (?:pr|diff)"
    r"|(?:various|several|some) (?:improvements|fixes|optimizations)[.;]"
    r"|should (?:be|run) faster[.;]|for better performance[.;]|run the (?:usual|relevant|standard) tests"
    r"|verify (?:that )?(?:it|everything) works"
    # Stock openers of a Validation copied from card to card instead of written per PR.
    r"|no (?:new |unit |dedicated )?tests? (?:was|were|is|are) (?:added|included|touched)"
    r"|the (?:diff|pr|change|patch) (?:adds|added|ships|includes|touches) no (?:new |unit )?tests?"
    r"|there (?:is|are) no (?:new )?tests? in (?:the|this) (?:diff|pr)"
    r"|without a (?:new |dedicated )?test in the diff)",
    re.IGNORECASE,
)


@rule("P008", "stock-phrase")
def stock_phrase(ctx, card):
    """A judgement section uses a stock phrase that would fit any PR.

    "This PR improves performance.", "see the diff for details", "run the relevant
    tests": say what got faster, by how much, where in the diff, and which test.
    Stock Validation openers ("No test was added", "the diff adds no test, so ...")
    count too: say what does exercise this change, and how.
    """
    for name in JUDGEMENT:
        sec = card.sections.get(name)
        if sec is None:
            continue
        fenced = False
        for number, line in sec.body:
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            m = _STOCK.search(_CODE_SPAN.sub(" ", line))
            if m:
                yield _f(ctx, card, number, "P008", f"stock phrase {m.group(0).strip()!r}: say what this diff did")

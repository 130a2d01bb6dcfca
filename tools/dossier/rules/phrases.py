"""Prose rules (P) read per card: judgement sections must say something concrete.

The rules that compare cards with each other (templated sentences, near-copies) live
in similarity.py."""

from __future__ import annotations

import functools
import re

from .._prose import JUDGEMENT
from ..cards import is_fence
from .base import Caseless, Finding, rule

MIN_WORDS = {"Motivation": 25, "Key implementation": 25, "Validation": 15}
_PLACEHOLDER = Caseless(
    r"\b(TODO|TBD|FIXME|XXX|lorem ipsum|WRITE ME|fill (?:me|in) later)\b|<fill[^>]*>|<!--\s*dossier:|^\s*\.\.\.\s*$",
    re.MULTILINE,
)
# Case-sensitive twin over lower-cased text: a quick "anything at all?" test per card.
_PLACEHOLDER_FAST = re.compile(
    r"todo|tbd|fixme|xxx|lorem ipsum|write me|fill (?:me|in) later|<fill|<!--\s*dossier:|^\s*\.\.\.\s*$",
    re.MULTILINE,
)
# _PLACEHOLDER_FAST taken apart: its literal alternatives as substrings, its two others by
# regexes that run only when their literal part is there (one alternation regex over every
# card's whole text costs more than all of these together).
_FAST_LITERALS = ("todo", "tbd", "fixme", "xxx", "lorem ipsum", "write me", "fill me later", "fill in later", "<fill")
_FAST_COMMENT = re.compile(r"<!--\s*dossier:")
_FAST_ELISION = re.compile(r"^\s*\.\.\.\s*$", re.MULTILINE)


def _fast_placeholder(low: str) -> bool:
    """Whether `_PLACEHOLDER_FAST.search(low)` would match."""
    return (any(w in low for w in _FAST_LITERALS) or ("<!--" in low and _FAST_COMMENT.search(low) is not None)
            or ("..." in low and _FAST_ELISION.search(low) is not None))


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]+")
_STOP = set(
    "the a an and or of to in for on with by from this that these those is are was were be been it its as at "
    "into via pr pull request adds add added support supports fix fixes fixed use uses using when which".split()
)
_CODE_SPAN = re.compile(r"`[^`]*`")
_CMD = Caseless(r"`[^`]*(?:python|pytest|bash|sglang|dossier|curl|--[a-z])[^`]*`|```")
_TEST_REF = re.compile(r"(?:test_\w+|tests?/[\w/.-]+|\w+_test\.py|unittest|pytest)")


def _f(ctx, card, line, code, msg, col=1):
    return Finding(ctx.rel(card.path), line, col, code, msg)


def _content_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP]


@rule("P001", "placeholder")
def placeholder(ctx, card):
    """A placeholder or an unfilled scaffold comment is left in the card.

    `dossier new` leaves `<!-- dossier: ... -->` comments and empty sections; a card
    is done when none of them remain. TODO, TBD, FIXME, XXX and lorem ipsum also fire.
    """
    if not _fast_placeholder(card.text.lower()):
        return  # the common case: a few substring scans of the whole card
    fenced, prose = False, []
    for number, line in enumerate(card.text.split("\n"), start=1):
        if is_fence(line):
            fenced = not fenced
            continue
        if not fenced:
            prose.append((number, line))
    # A match within one line is a match in the lines joined by newlines, so one scan of
    # the prose rules most cards out (an excerpt's `...` elision is what passed the first).
    if not _PLACEHOLDER.found("\n".join(line for _, line in prose)):
        return
    for number, line in prose:
        m = _PLACEHOLDER.pattern.search(line)
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


@functools.lru_cache(maxsize=8)
def _any_lane(lanes: frozenset) -> re.Pattern:
    """One pattern for "names any of these lanes", in place of one search per lane."""
    alternatives = "|".join(map(re.escape, sorted(lanes)))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])") if lanes else re.compile(r"(?!x)x")


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
    if all(isinstance(l, str) for l in lanes):
        if _any_lane(frozenset(lanes)).search(text):
            return
    elif any(re.search(rf"(?<![\w-]){re.escape(l)}(?![\w-])", text) for l in lanes):
        return
    if _TEST_REF.search(text) or _CMD.found(text):
        return
    yield _f(ctx, card, sec.line, "P005", "validation names no lane, test or command")


_STOCK = Caseless(
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
)


@rule("P008", "stock-phrase")
def stock_phrase(ctx, card):
    """A judgement section uses a stock phrase that would fit any PR.

    "This PR improves performance.", "see the diff for details", "run the relevant
    tests": say what got faster, by how much, where in the diff, and which test.
    Stock Validation openers ("No test was added", "the diff adds no test, so ...")
    count too: say what does exercise this change, and how.
    """
    prose = []
    for name in JUDGEMENT:
        sec = card.sections.get(name)
        if sec is None:
            continue
        fenced = False
        for number, line in sec.body:
            if is_fence(line):
                fenced = not fenced
                continue
            if not fenced:
                prose.append((number, _CODE_SPAN.sub(" ", line) if "`" in line else line))
    # _STOCK matches nothing that spans a newline: one scan of the joined lines rules most cards out.
    if not _STOCK.found("\n".join(line for _, line in prose)):
        return
    for number, line in prose:
        m = _STOCK.pattern.search(line)
        if m:
            yield _f(ctx, card, number, "P008", f"stock phrase {m.group(0).strip()!r}: say what this diff did")

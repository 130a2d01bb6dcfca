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
_FAST_LITERALS = ("todo", "tbd", "fixme", "xxx", "lorem ipsum", "write me")
_FAST_FILL = ("fill me later", "fill in later", "<fill")  # each contains "fill"
_FAST_COMMENT = re.compile(r"<!--\s*dossier:")
_FAST_ELISION = re.compile(r"^\s*\.\.\.\s*$", re.MULTILINE)


# The letters beyond ASCII that a case-insensitive pattern takes for ASCII ones (İ ı ſ and
# the Kelvin sign): where none is, a case-insensitive match of ASCII words shows in the
# lower-cased text as those words lower-cased.
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")


def _lower_keeps_matches(text: str) -> bool:
    return text.isascii() or not any(c in text for c in _FOLDS_TO_ASCII)


def _fast_placeholder(low: str) -> bool:
    """Whether `_PLACEHOLDER_FAST.search(low)` would match."""
    return _placeholder_words(low) or ("..." in low and _elision_line(low))


def _placeholder_words(low: str) -> bool:
    """`_fast_placeholder` but for its `...` line: a placeholder word or a scaffold comment."""
    return (any(w in low for w in _FAST_LITERALS) or ("fill" in low and any(w in low for w in _FAST_FILL))
            or ("<!--" in low and _FAST_COMMENT.search(low) is not None))


def _elision_line(text: str) -> bool:
    r"""Whether `_FAST_ELISION.search(text)` would match: some line is `...` between whitespace.

    A match's `\s*` may run over blank lines, but then the line holding the `...` is such a
    line too; str.strip strips what `\s` matches. Looking only at each `...` costs far less
    than the regex trying every line start of a card whose excerpts elide code.
    """
    i = text.find("...")
    while i != -1:
        start, end = text.rfind("\n", 0, i) + 1, text.find("\n", i + 3)
        if not text[start:i].strip() and not text[i + 3:len(text) if end == -1 else end].strip():
            return True
        i = text.find("...", i + 1)
    return False


def _unfenced(text: str) -> str:
    """The lines of `text` outside fenced code, fence lines left out, joined by newlines.

    Equal to joining the lines `is_fence` leaves out of a fence as P001's line loop does,
    from the fence lines alone: a fence line is one whose first non-blank characters open
    a fence, so each ``` or ~~~ with only whitespace before it on its line starts one.
    """
    fences = set()
    for opener in ("```", "~~~"):
        i = text.find(opener)
        while i != -1:
            start = text.rfind("\n", 0, i) + 1
            if not text[start:i].strip():
                fences.add(start)
            i = text.find(opener, i + 3)
    out, pos, fenced = [], 0, False
    for start in sorted(fences):
        if not fenced and start > pos:
            out.append(text[pos:start - 1])  # the lines before this fence line
        fenced = not fenced
        end = text.find("\n", start)
        pos = len(text) + 1 if end == -1 else end + 1
    if not fenced and pos <= len(text):
        out.append(text[pos:])
    return "\n".join(out)


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


@rule("P001", "placeholder")
def placeholder(ctx, card):
    """A placeholder or an unfilled scaffold comment is left in the card.

    `dossier new` leaves `<!-- dossier: ... -->` comments and empty sections; a card
    is done when none of them remain. TODO, TBD, FIXME, XXX and lorem ipsum also fire.
    """
    low = card.text_lower
    words = _placeholder_words(low)
    if not words and not ("..." in low and _elision_line(low)):
        return  # the common case: a few substring scans of the whole card
    # What follows only skips cards with no finding: a finding is a match within one prose
    # line, so a match in the prose lines joined by newlines (an excerpt's `...` elision is
    # what passed the first test). Where lower-casing keeps every match, that match implies
    # _fast_placeholder's on the prose; its words part can hold only where the whole card
    # has them (`words`).
    text = _unfenced(card.text)
    if (_lower_keeps_matches(text)
            and not ((words and _placeholder_words(text.lower())) or ("..." in text and _elision_line(text)))):
        return
    if not _PLACEHOLDER.found(text):
        return
    fenced, prose = False, []
    for number, line in enumerate(card.text.split("\n"), start=1):
        if is_fence(line):
            fenced = not fenced
            continue
        if not fenced:
            prose.append((number, line))
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
    title_words = set(map(str.lower, _WORD.findall(str(card.meta.get("title", ""))))) - _STOP
    new = set()
    for m in _WORD.finditer(sec.prose()):  # stops at the 12th new word: most motivations get there early
        word = m.group().lower()
        if word not in _STOP and word not in title_words:
            new.add(word)
            if len(new) == 12:
                return
    yield _f(ctx, card, sec.line, "P002", "motivation restates the title; say why the PR existed")


# "At least n words" in one anchored match, the words being those _WORD finds once code
# spans are blanked to " x " (which adds none). Every character has one reading: a code
# span, a backtick that opens none, a non-letter or a letter that ends its run are
# skipped, and a word runs to the end of its run as findall takes it; so the pattern
# matches only if there are n words, and cannot backtrack into another count.
_NOT_A_WORD = r"`[^`]*`|`(?![^`]*`)|[^A-Za-z`]|[A-Za-z](?![A-Za-z0-9_])"
_A_WORD = r"[A-Za-z][A-Za-z0-9_]+(?![A-Za-z0-9_])"
_AT_LEAST = {n: re.compile(rf"(?:(?:{_NOT_A_WORD})*{_A_WORD}){{{n}}}") for n in set(MIN_WORDS.values())}


@rule("P003", "thin-section")
def thin_section(ctx, card):
    """A judgement section is too short to be useful (Motivation and Key implementation
    need 25 words, Validation 15)."""
    for name, minimum in MIN_WORDS.items():
        sec = card.sections.get(name)
        if sec is None:
            continue
        prose = sec.prose()
        if _AT_LEAST[minimum].match(prose) or not sec.text:
            continue  # enough words (the common case, without counting them all), or an empty section
        words = len(_WORD.findall(_CODE_SPAN.sub(" x ", prose)))
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


def _names_a_path(lock: dict, text: str) -> bool:
    """Whether `text` holds a touched file's path, on a lock that `_diff_vocabulary` reads without error.

    Such a path is in the vocabulary, so P004 holds; checking the lock's shape keeps the
    error P004 reports on a malformed lock. `"".join` fails on any symbol not a string.
    """
    files = lock.get("files", [])
    if type(files) is not list:
        return False
    found = False
    for f in files:
        if type(f) is not dict or type(f.get("path")) is not str:
            return False
        old, symbols = f.get("old_path"), f.get("symbols", [])
        if (old and type(old) is not str) or type(symbols) is not list:
            return False
        try:
            "".join(symbols)
        except TypeError:
            return False
        if not found:  # the vocabulary's paths: lower-cased, longer than 2, holding a /
            found = any(len(p) > 2 and "/" in p and p in text for p in (f["path"].lower(), (old or "").lower()))
    return found


_TOKEN = re.compile(r"[a-z0-9_./-]+")


@rule("P004", "implementation-names-nothing")
def implementation_names_nothing(ctx, card):
    """Key implementation names no file, function, class or constant from the diff.

    The section must point into the change: a touched file, or a symbol the lock
    recorded (functions and classes in hunk headers and in added/removed definitions).
    """
    sec = card.sections.get("Key implementation")
    lock = ctx.card_lock(card)
    if sec is None or lock is None or not (text := card.body_text("Key implementation").strip()):
        return
    text = text.lower()
    if _names_a_path(lock, text):
        return  # the common case, without building the vocabulary
    vocab = _diff_vocabulary(lock)
    if not (any(v in text for v in vocab if "/" in v) or set(_TOKEN.findall(text)) & vocab):
        yield _f(ctx, card, sec.line, "P004", "implementation names nothing from the diff (no touched file or symbol)")


@functools.lru_cache(maxsize=8)
def _any_lane(lanes: frozenset) -> re.Pattern:
    """One pattern for "names any of these lanes", in place of one search per lane."""
    alternatives = "|".join(map(re.escape, sorted(lanes)))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])") if lanes else re.compile(r"(?!x)x")


def _names_lane(lanes: frozenset, text: str) -> bool:
    """Whether `_any_lane(lanes)` matches in `text`, searched from the first place a lane's name
    occurs: no match starts before it, and the lookbehind still sees the text before."""
    first = min((i for lane in lanes if (i := text.find(lane)) != -1), default=-1)
    return first != -1 and _any_lane(lanes).search(text, first) is not None


@rule("P005", "validation-names-nothing")
def validation_names_nothing(ctx, card):
    """Validation names no lane, test or command.

    Name a lane from `playbook/lanes.yaml`, a test file or test function, or a command
    in backticks (`python -m ...`, `pytest ...`, a server flag like `--mm-attention-backend`).
    """
    sec = card.sections.get("Validation")
    if sec is None or not (text := card.body_text("Validation").strip()):
        return
    lanes = set(ctx.lanes) | set((card.meta or {}).get("lanes") or [])
    if all(isinstance(l, str) for l in lanes):
        # Any one of the three passes the card: the cheapest and most often true first
        # (every _TEST_REF alternative holds "test").
        if _CMD.found(text) or _names_lane(frozenset(lanes), text) or ("test" in text and _TEST_REF.search(text)):
            return
    elif (any(re.search(rf"(?<![\w-]){re.escape(l)}(?![\w-])", text) for l in lanes)
          or _TEST_REF.search(text) or _CMD.found(text)):
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


# What each _STOCK alternative must contain, lower-cased, under a word that all in its
# group share ("improve" stands for "improves" and "improvements", "no test" for "no
# tests"): a card with none has no stock phrase, and these scans cost little next to _STOCK's.
_STOCK_WORDS = {
    "improve": ("improve",),
    "optimiz": ("optimiz",),
    "adds support for": ("adds support for",),
    "fixes": ("fixes a bug", "fixes the bug", "fixes.", "fixes;"),
    "performance": ("performance.", "performance;", "performance significantly", "performance a lot"),
    "title s": ("title s",),
    "details": ("details",),
    "refer to the": ("refer to the",),
    "faster": ("faster.", "faster;"),
    "usual tests": ("usual tests",),
    "relevant tests": ("relevant tests",),
    "standard tests": ("standard tests",),
    "works": ("it works", "everything works"),
    "no test": ("no test",),
    "no new test": ("no new test",),
    "no unit test": ("no unit test",),
    "no dedicated test": ("no dedicated test",),
    "test in the diff": ("test in the diff",),
}
# _CODE_SPAN confined to a line: over lines joined by newlines, it blanks what it blanks line by line.
_LINE_CODE_SPAN = re.compile(r"`[^`\n]*`")


def _no_stock_phrase(card) -> bool:
    """True only where P008's line loop would find nothing.

    Without a fence line in the judgement sections, the loop's prose is every line, so
    its one scan can run on their text with code spans blanked; where lower-casing keeps
    every match, substring scans for _STOCK_WORDS rule most cards out before it.
    """
    text = card.bodies_text(JUDGEMENT)
    if "```" in text or "~~~" in text:
        return False
    prose = _LINE_CODE_SPAN.sub(" ", text)
    if _lower_keeps_matches(prose):
        low = prose.lower()
        if not any(key in low and any(w in low for w in words) for key, words in _STOCK_WORDS.items()):
            return True
    return not _STOCK.found(prose)


@rule("P008", "stock-phrase")
def stock_phrase(ctx, card):
    """A judgement section uses a stock phrase that would fit any PR.

    "This PR improves performance.", "see the diff for details", "run the relevant
    tests": say what got faster, by how much, where in the diff, and which test.
    Stock Validation openers ("No test was added", "the diff adds no test, so ...")
    count too: say what does exercise this change, and how.
    """
    if _no_stock_phrase(card):
        return
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

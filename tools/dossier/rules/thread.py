"""Thread status lives in the frontmatter (P011), never in a card's prose (P010).

Whether the PR's thread was read is a fact about the card's sources, recorded as
`thread: read` or `thread: none found (searched YYYY-MM-DD)`. Prose such as "the PR had no
description" or "read from the diff" was wrong in most of the cards that said it (the
threads existed), so a card says what the thread or the diff shows, not whether a thread
could be found.
"""

from __future__ import annotations

import re

from .base import Finding, rule

_STATUS = re.compile(
    r"\b(?:no (?:PR )?description|(?:has|had|carries|carried|with) (?:an? )?(?:empty|no) description"
    r"|without a description|description (?:is|was) empty|read from the diff"
    r"|(?:not|never) (?:found )?in the (?:search )?corpus|corpus (?:has|holds|had) no (?:thread|description)"
    r"|no (?:PR )?thread (?:was |could be )?found|thread (?:was|is) not (?:found|read)"
    r"|thread (?:was|is) (?:missing|unavailable)|(?:search|issues) corpus|the corpus(?![ -](?:WER|CER|level)))\b",
    re.IGNORECASE)
# The same pattern over lower-cased text, without IGNORECASE: a third of the time, as
# case-insensitive matching cannot use the literal prefixes (text whose length lower()
# changes falls back to the case-insensitive pattern, so offsets stay right).
_STATUS_LOWER = re.compile(_STATUS.pattern.lower())
_JUDGED = ("Motivation", "Key implementation", "Validation", "Risk")
# What each _STATUS alternative must contain (lower-cased), under the word that all in
# its group share: a card whose judgement sections hold none has no finding, and a few
# substring scans cost far less than the pattern's.
_STATUS_WORDS = {
    "description": ("no description", "no pr description", "empty description", "without a description",
                    "description is empty", "description was empty"),
    "corpus": ("the corpus", "search corpus", "issues corpus", "corpus ha", "corpus holds"),
    "thread": ("no thread", "no pr thread", "thread was", "thread is"),
    "read from the diff": ("read from the diff",),
}


def _no_thread_status(card) -> bool:
    """True only where P010's section loop would find nothing.

    That loop reads each section's lines joined by spaces, fenced lines blanked (which
    only adds double spaces, and no word above holds one), lower-cased when that keeps
    the length: so when the whole text keeps its length, a match needs a word above in
    the sections' lower-cased lines joined by spaces.
    """
    text, low = card.bodies_text(_JUDGED), card.bodies_lower(_JUDGED)
    if len(low) != len(text):
        return False
    spaced = low.replace("\n", " ")
    return not any(key in spaced and any(w in spaced for w in words) for key, words in _STATUS_WORDS.items())


@rule("P010", "thread-status-in-prose")
def thread_status_in_prose(ctx, card):
    """A card's prose says whether the PR's thread or description could be found.

    Say what the thread, the issue or the diff shows instead, and record the search in
    the frontmatter: `thread: read`, or `thread: none found (searched YYYY-MM-DD)`.
    """
    if _no_thread_status(card):
        return
    for name in _JUDGED:
        section = card.sections.get(name)
        if section is None:
            continue
        # The section's prose as one text (fences blanked), so a phrase that wraps is seen whole.
        starts, text, fenced = [], "", False
        for number, line in section.body:
            if line.lstrip().startswith(("```", "~~~")):
                fenced = not fenced
                line = ""
            starts.append((len(text), number))
            text += ("" if fenced else line) + " "
        lower = text.lower()
        matches = _STATUS_LOWER.finditer(lower) if len(lower) == len(text) else _STATUS.finditer(text)
        for m in matches:
            start, number = max((s for s in starts if s[0] <= m.start()), default=(0, section.line))
            said = text[m.start():m.end()]
            yield Finding(ctx.rel(card.path), number, m.start() - start + 1, "P010",
                          f"thread status in prose ('{' '.join(said.split())}'); record it as `thread:` "
                          f"in the frontmatter and say what the sources show")


_THREAD_VALUE = re.compile(r"read|none found \(searched \d{4}-\d{2}-\d{2}\)")


@rule("P011", "thread-status-missing")
def thread_status_missing(ctx, card):
    """The frontmatter does not record whether the PR's thread was read.

    Every card says once, in its frontmatter, what its thread search found: `thread: read`
    when the PR's description and discussion were read, or
    `thread: none found (searched YYYY-MM-DD)` when the issues corpus holds no thread.
    """
    meta = card.meta if isinstance(card.meta, dict) else None
    if meta is None:
        return  # S001 reports it
    value = meta.get("thread")
    if value is None:
        yield Finding(ctx.rel(card.path), 1, 1, "P011",
                      "no `thread:` in the frontmatter; add `thread: read` or "
                      "`thread: none found (searched YYYY-MM-DD)`")
    elif not isinstance(value, str) or not _THREAD_VALUE.fullmatch(value.strip()):
        yield Finding(ctx.rel(card.path), card.key_line("thread"), 1, "P011",
                      f"`thread: {value}` is neither `read` nor `none found (searched YYYY-MM-DD)`")

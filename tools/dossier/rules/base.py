"""Rule registry: codes, families, the `@rule` decorator and findings. Rules read only the knowledge base (`kb.KnowledgeBase`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterable

from ..findings import Finding  # noqa: F401 - the rules' findings, defined below them

FAMILIES = {
    "S": "structure",
    "G": "grounding",
    "P": "prose quality",
    "L": "links",
    "B": "generated files",
    "K": "skill",
    "R": "radar",
    "M": "measurements",
}


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    scope: str  # "card" runs once per card; "project" runs once per check
    summary: str
    raw_doc: str  # the docstring after its first line, as written (see `doc`)
    func: Callable
    background: bool = False  # waits on subprocesses: run in a thread alongside the others
    # KnowledgeBase properties the rule reads that wait on a subprocess: `check` starts
    # computing them in a thread before anything else, so the wait overlaps the other rules.
    prefetch: tuple[str, ...] = ()
    # Requests the rule can send the lane subprocess before the cards load: `check` calls it
    # with the KnowledgeBase right after starting that subprocess, so the subprocess answers
    # on the other core while the cards load (it only sends; a failure is left to the rule).
    ahead: Callable | None = None
    # A project rule whose findings may name a card or its lock (M003 does, on a card's
    # measurement block). `check PATHS` reports only on those cards and locks, so it runs
    # only these among the project rules: the others report on the playbook, the registry,
    # the generated pages, SKILL.md..., and would cost a whole-base run to say nothing.
    on_cards: bool = False

    @property
    def family(self) -> str:
        return FAMILIES.get(self.code[0], "other")

    @cached_property
    def doc(self) -> str:
        """The docs page: `raw_doc` dedented when asked, not for every rule at import (with
        textwrap's own import, ~5 ms of every check)."""
        return _dedent(self.raw_doc)


RULES: dict[str, Rule] = {}


def rule(code: str, name: str, scope: str = "card", background: bool = False, prefetch: tuple[str, ...] = (),
         ahead: Callable | None = None, on_cards: bool = False):
    """Register a rule; its docstring's first line is the summary, the rest the docs page."""

    def wrap(func: Callable[..., Iterable[Finding]]):
        doc = (func.__doc__ or "").strip()
        summary, _, rest = doc.partition("\n")
        if code in RULES:
            raise RuntimeError(f"duplicate rule code {code}")
        RULES[code] = Rule(code, name, scope, summary.strip(), rest, func, background, tuple(prefetch), ahead, on_cards)
        return func

    return wrap


class Caseless:
    """A case-insensitive pattern whose "is there a match?" is asked cheaply.

    On ASCII text (nearly every card) the question goes to a case-sensitive twin, the
    pattern lower-cased, over the lower-cased text: for ASCII both match at the same
    places, and without IGNORECASE the regex engine's literal scans work again (several
    times faster on long alternations). Other text asks the pattern itself. Matches a
    rule reports come from `.pattern`, so their text keeps the card's case.

    Both are compiled on first use: ~40 patterns at import cost ~9 ms of every check before
    its work splits over two processes, and each process needs only its own rules' patterns.
    """

    def __init__(self, source: str, flags: int = 0):
        # Lower-casing \B, \S, \W, \D, \A or \Z would change their meaning.
        if re.search(r"\\[A-Z]", source):
            raise ValueError(f"Caseless cannot lower-case {source!r}")
        self._source, self._flags = source, flags

    @cached_property
    def pattern(self) -> re.Pattern:
        return re.compile(self._source, self._flags | re.IGNORECASE)

    @cached_property
    def _twin(self) -> re.Pattern:
        return re.compile(self._source.lower(), self._flags)

    def found(self, text: str) -> bool:
        if text.isascii():
            return self._twin.search(text.lower()) is not None
        return self.pattern.search(text) is not None

    def search(self, text: str):
        """`pattern.search`, skipped (None) when `found` says there is nothing."""
        return self.pattern.search(text) if self.found(text) else None


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip()

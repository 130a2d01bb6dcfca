"""Rule registry: codes, families, the `@rule` decorator and findings. Rules read only the knowledge base (`kb.KnowledgeBase`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

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


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    col: int
    code: str
    message: str

    def as_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "col": self.col, "code": self.code, "message": self.message}


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    scope: str  # "card" runs once per card; "project" runs once per check
    summary: str
    doc: str
    func: Callable
    background: bool = False  # waits on subprocesses: run in a thread alongside the others
    # KnowledgeBase properties the rule reads that wait on a subprocess: `check` starts
    # computing them in a thread before anything else, so the wait overlaps the other rules.
    prefetch: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        return FAMILIES.get(self.code[0], "other")


RULES: dict[str, Rule] = {}


def rule(code: str, name: str, scope: str = "card", background: bool = False, prefetch: tuple[str, ...] = ()):
    """Register a rule; its docstring's first line is the summary, the rest the docs page."""

    def wrap(func: Callable[..., Iterable[Finding]]):
        doc = (func.__doc__ or "").strip()
        summary, _, rest = doc.partition("\n")
        if code in RULES:
            raise RuntimeError(f"duplicate rule code {code}")
        RULES[code] = Rule(code, name, scope, summary.strip(), _dedent(rest), func, background, tuple(prefetch))
        return func

    return wrap


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip()

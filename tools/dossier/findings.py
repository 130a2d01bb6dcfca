"""A finding: one problem `dossier check` reports, at a path, line and column, under a rule code.

Kept below the rules and the knowledge base, so that what reads inputs before any rule runs
(`readable`) reports in the same shape as `check` without importing the rules.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    col: int
    code: str
    message: str

    def as_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "col": self.col, "code": self.code, "message": self.message}

"""What a superseding commit did with the lines of a card it took: reverted, moved, rewritten or gone.

Decided per commit and file, from git alone, for `supersede.compute`:

- reverted: the commit reverts the card's commit (a `Revert ...` subject naming the card's
  PR or title, or a body saying "This reverts commit <sha>");
- moved: most of the lines, whitespace aside, stand at the pin in another file the commit
  touched, or the symbols that held them are defined there; said as `path::symbol`;
- rewritten: the symbols that held them (the innermost def/class around each line at the
  commit's parent) still stand in the same file at the pin, with other lines;
- gone: none of these.
"""

from __future__ import annotations

import ast
from collections import Counter

import git


def normalise(text: str) -> str:
    """A line with its whitespace collapsed, so a re-indented or re-wrapped line still matches."""
    return " ".join(text.split())


def spans(source: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every def and class, outermost first."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}" if prefix else child.name
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                out.append((first, child.end_lineno or child.lineno, name))
                visit(child, name)
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def enclosing(table: list[tuple[int, int, str]], line: int) -> str | None:
    """The innermost symbol around a line number, or None at module level."""
    best = None
    for first, last, name in table:
        if first <= line <= last and (best is None or first >= best[0]):
            best = (first, name)
    return best[1] if best else None


class Fates:
    """Classifies superseding commits against one pinned SHA, caching blobs and symbol tables."""

    def __init__(self, history, head: str):
        self.history, self.head = history, head
        self._text: dict[tuple[str, str], str | None] = {}
        self._spans: dict[tuple[str, str], list] = {}
        self._norm: dict[str, dict[str, list[int]]] = {}
        self._touched: dict[str, list[str]] = {}
        self._body: dict[str, str] = {}

    # --- git reads, cached -------------------------------------------------------------
    def text(self, rev: str | None, path: str) -> str | None:
        key = (rev or "", path)
        if key not in self._text:
            data = None
            if rev:
                try:
                    _, kind, _, raw = self.history.repo.git.get_object_data(f"{rev}:{path}")
                    data = raw.decode("utf-8", "surrogateescape") if kind == b"blob" or kind == "blob" else None
                except (ValueError, git.GitCommandError, OSError):
                    data = None
            self._text[key] = data
        return self._text[key]

    def table(self, rev: str | None, path: str) -> list:
        key = (rev or "", path)
        if key not in self._spans:
            src = self.text(rev, path) if path.endswith(".py") else None
            self._spans[key] = spans(src) if src else []
        return self._spans[key]

    def norm_lines(self, path: str) -> dict[str, list[int]]:
        """Normalised line -> line numbers in `path` at the pin."""
        if path not in self._norm:
            out: dict[str, list[int]] = {}
            for i, line in enumerate((self.text(self.head, path) or "").splitlines(), 1):
                out.setdefault(normalise(line), []).append(i)
            self._norm[path] = out
        return self._norm[path]

    def touched(self, c) -> list[str]:
        """Files the commit added or modified (where moved lines could have gone)."""
        if c.sha not in self._touched:
            args = ["--no-commit-id", "-r", "--name-status", "--no-renames"]
            args += [c.parent, c.sha] if c.parent else ["--root", c.sha]
            try:
                out = self.history.repo.git.diff_tree(*args)
            except git.GitCommandError:
                out = ""
            rows = [line.split("\t", 1) for line in out.splitlines() if "\t" in line]
            self._touched[c.sha] = [p for st, p in rows if st[:1] in "AM"]
        return self._touched[c.sha]

    def body(self, sha: str) -> str:
        if sha not in self._body:
            try:
                self._body[sha] = self.history.repo.git.log("-1", "--format=%B", sha)
            except git.GitCommandError:
                self._body[sha] = ""
        return self._body[sha]

    # --- the decision ------------------------------------------------------------------
    def is_revert_of(self, c, card: int, title: str, card_sha: str) -> bool:
        if not c.subject.lower().startswith("revert"):
            return False
        if f"#{card})" in c.subject or f"#{card} " in c.subject or (title and title in c.subject):
            return True
        return bool(card_sha) and f"reverts commit {card_sha[:7]}" in self.body(c.sha)

    def classify(self, c, taken: dict[str, int], card: int, title: str, card_sha: str) -> dict:
        """{"lines": {fate: n}, "to": Counter of "path::symbol", "moved": the same for moved lines only,
        "files": {old path: Counter of new paths}} for the card lines this commit took."""
        total = sum(taken.values())
        if self.is_revert_of(c, card, title, card_sha):
            return {"lines": {"reverted": total}, "to": Counter(), "moved": Counter(), "files": {}}
        left = dict(taken)
        lines: Counter = Counter()
        to: Counter = Counter()
        moved: Counter = Counter()
        files: dict[str, Counter] = {}
        for path, removed in c.files.items():
            mine = []
            for no, h, text in removed:
                if left.get(h):
                    left[h] -= 1
                    mine.append((no, text))
            if mine:
                fate, where = self._file_fate(c, path, mine)
                lines[fate] += len(mine)
                if where:
                    to[where] += len(mine)
                    if fate == "moved":
                        moved[where] += len(mine)
                        if where.split("::")[0] != path:
                            files.setdefault(path, Counter())[where.split("::")[0]] += len(mine)
        rest = sum(left.values())  # lines the walk could not place in a file: nothing to follow
        if rest:
            lines["gone"] += rest
        return {"lines": dict(lines), "to": to, "moved": moved, "files": files}

    def _file_fate(self, c, path: str, mine: list[tuple[int, str]]) -> tuple[str, str | None]:
        norm = [n for n in (normalise(t) for _, t in mine) if len(n) > 8]  # short lines match anywhere
        old_table = self.table(c.parent, path)
        held = Counter(s for s in (enclosing(old_table, no) for no, _ in mine) if s)
        here = self.text(self.head, path) is not None
        # 1. The lines themselves, whitespace aside, in another file the commit wrote.
        best, best_n = None, 0
        for other in self.touched(c):
            if other == path:
                continue
            found = self.norm_lines(other)
            n = sum(1 for x in norm if x in found)
            if n > best_n:
                best, best_n = other, n
        if best and norm and best_n * 2 >= len(norm):
            return "moved", self._where(best, norm)
        # 2. The symbols that held them, in place (rewritten) or in another file the commit wrote (moved).
        if held and here:
            defined = {name for _, _, name in self.table(self.head, path)}
            for sym, _ in held.most_common():
                if sym in defined:
                    return "rewritten", f"{path}::{sym}"
        for sym, _ in held.most_common():
            short = sym.rsplit(".", 1)[-1]
            for other in self.touched(c):
                if other == path:
                    continue
                names = {name for _, _, name in self.table(self.head, other)}
                if sym in names or short in {n.rsplit(".", 1)[-1] for n in names}:
                    match = sym if sym in names else next(n for n in sorted(names) if n.rsplit(".", 1)[-1] == short)
                    return "moved", f"{other}::{match}"
        # 3. Module-level lines of a file that still stands, or lines re-indented in place.
        if here and (not held or (norm and sum(1 for x in norm if x in self.norm_lines(path)) * 2 >= len(norm))):
            return "rewritten", self._where(path, norm) if norm else path
        return "gone", None

    def _where(self, path: str, norm: list[str]) -> str:
        """`path::symbol` for the symbol at the pin that holds most of the matched lines."""
        found, table = self.norm_lines(path), self.table(self.head, path)
        syms = Counter(s for x in norm for no in found.get(x, [])[:1] for s in [enclosing(table, no)] if s)
        return f"{path}::{syms.most_common(1)[0][0]}" if syms else path

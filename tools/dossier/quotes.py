"""Excerpts as quotations: match a card's diff block against a lock's per-hunk hashes.

The convention (documented on the site's card-format page):

- a ```diff block under `### \\`path\\`` holds one or more *runs*;
- runs are separated by an elision line, `...` alone on a line; a hunk header
  (`@@ -a,b +c,d @@`) inside the block also starts a new run, confined to that hunk;
- each run is a contiguous, in-order run of one hunk of that file, with the exact
  sign and indentation; runs follow each other in diff order;
- the whole block may be dedented uniformly (the same number of spaces removed
  after the sign of every non-blank line); nothing else may change.

Only hashes are compared, so this works from the lock alone, with no code text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .evidence import ENTRY_LEN, hunk_lines, line_hash

ELISION = "..."
_HUNK = re.compile(r"^(@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@)")
MAX_DEDENT = 48


@dataclass(slots=True)  # thousands per check: slots make them cheaper to build
class QuotedLine:
    number: int  # line number in the card
    sign: str
    body: str


@dataclass
class Run:
    lines: list[QuotedLine] = field(default_factory=list)
    hunk: str | None = None  # header the run is confined to, if the block names one


@dataclass
class Problem:
    number: int
    message: str


def split_runs(lines: list[tuple[int, str]], heading_hunk: str | None) -> tuple[list[Run], list[Problem]]:
    """Cut a block into runs at `...` lines and hunk headers; bad signs are problems."""
    runs, problems = [Run(hunk=heading_hunk)], []
    current = runs[0].lines
    for number, text in lines:
        sign = text[:1]
        # Most lines are quoted diff lines: the sign test comes first, and the elision
        # and hunk-header tests run only on lines that can be one (`...` may be indented).
        if sign in ("+", "-") or (sign == " " and text.strip() != ELISION):
            current.append(QuotedLine(number, sign, text[1:]))
            continue
        if text.strip() == ELISION:
            runs.append(Run())
            current = runs[-1].lines
            continue
        m = _HUNK.match(text) if sign == "@" else None
        if m:
            runs.append(Run(hunk=m.group(1)))
            current = runs[-1].lines
            continue
        if sign == "\\":
            continue  # "\ No newline at end of file"
        if text == "":
            current.append(QuotedLine(number, " ", ""))  # an empty context line
            continue
        problems.append(Problem(number, "excerpt line must start with '+', '-', ' ', or be '...' (an elision)"))
    return [r for r in runs if r.lines], problems


def _hash(line: QuotedLine, dedent: int) -> str:
    body = line.body
    if dedent and body.strip():
        body = " " * dedent + body
    return line_hash(line.sign, body)


def _find(run: Run, hunks: list[dict], dedent: int, after: tuple[int, int]) -> tuple[int, int] | None:
    """Position (hunk index, offset) of the first exact occurrence of the run at or after `after`."""
    want = [_hash(l, dedent) for l in run.lines]
    n = len(want)
    for hi, hunk in enumerate(hunks):
        if hi < after[0] or (run.hunk and hunk["header"] != run.hunk):
            continue
        seq = hunk.get("lines", [])
        off = after[1] if hi == after[0] else 0
        if isinstance(seq, str):  # schema 3: the entries in one string, found by str.find
            pos = _find_packed(seq, "".join(want), off)
            if pos is not None:
                return hi, pos
            continue
        stop = len(seq) - n + 1
        while off < stop:
            try:  # list.index finds each candidate first line at C speed
                off = seq.index(want[0], off, stop)
            except ValueError:
                break
            if seq[off:off + n] == want:
                return hi, off
            off += 1
    return None


def _find_packed(packed: str, want: str, off: int) -> int | None:
    """Entry index of the first occurrence of the entries `want` in `packed` at or after
    entry `off`. Signs are not hex digits, so in a well-formed lock a match starts on an
    entry boundary; the boundary test keeps a damaged one (an entry of another width) from
    matching across entries."""
    at = packed.find(want, off * ENTRY_LEN)
    while at != -1 and at % ENTRY_LEN:
        at = packed.find(want, at - at % ENTRY_LEN + ENTRY_LEN)  # the next boundary on
    return None if at == -1 else at // ENTRY_LEN


def _dedents(runs: list[Run], hunks: list[dict]) -> list[int]:
    """Dedent amounts worth trying: those under which the block's first line exists at all."""
    every = {h for hunk in hunks for h in hunk_lines(hunk)}
    first = next((l for r in runs for l in r.lines if l.body.strip()), None)
    if first is None:
        return [0]
    found = [k for k in range(MAX_DEDENT + 1) if _hash(first, k) in every]
    return found or [0]


def match_block(lines: list[tuple[int, str]], heading_hunk: str | None, facts: dict) -> list[Problem]:
    """Problems with one excerpt block against one file's facts; [] when it is an exact quotation."""
    runs, problems = split_runs(lines, heading_hunk)
    hunks = facts.get("hunks", [])
    if heading_hunk and heading_hunk not in {h["header"] for h in hunks}:
        return problems  # G002 reports the unknown hunk
    if not _match_runs(runs, hunks, 0):
        return problems  # the common case: quoted as is, no dedent to search for
    best: list[Problem] | None = None
    for dedent in _dedents(runs, hunks):
        found = _match_runs(runs, hunks, dedent)
        if not found:
            return problems
        if best is None or found[0].number > best[0].number:
            best = found
    return problems + (best or [])


def _match_runs(runs: list[Run], hunks: list[dict], dedent: int) -> list[Problem]:
    after = (0, 0)
    for run in runs:
        pos = _find(run, hunks, dedent, after)
        if pos is None:
            return [_diagnose(run, hunks, dedent)]
        after = (pos[0], pos[1] + len(run.lines))
    return []


def _diagnose(run: Run, hunks: list[dict], dedent: int) -> Problem:
    """Say which line breaks the run, and how."""
    every = {h for hunk in hunks if not run.hunk or hunk["header"] == run.hunk for h in hunk_lines(hunk)}
    where = f" of {run.hunk}" if run.hunk else ""
    if _find(run, hunks, dedent, (0, 0)) is not None:
        return Problem(run.lines[0].number, f"run is out of diff order: it comes before the previous run{where}; "
                                            "quote runs in the diff's order")
    # The longest prefix of the run that is a contiguous run somewhere tells where it breaks.
    for cut in range(len(run.lines) - 1, 0, -1):
        if _find(Run(run.lines[:cut], run.hunk), hunks, dedent, (0, 0)) is not None:
            line = run.lines[cut]
            break
    else:
        line = run.lines[0]
    if _hash(line, dedent) not in every:
        for sign in ("+", "-", " "):
            if sign != line.sign and _hash(QuotedLine(line.number, sign, line.body), dedent) in every:
                shown = {"+": "added ('+')", "-": "removed ('-')", " ": "context (' ')"}
                return Problem(line.number, f"sign differs: the diff{where} has this line as {shown[sign]}, "
                                            f"the excerpt as {shown[line.sign]}")
        bare = line.body.lstrip()
        for k in range(0, MAX_DEDENT + 16):
            if line_hash(line.sign, " " * k + bare) in every:
                return Problem(line.number, f"indentation differs from the diff{where} "
                                            "(only a uniform dedent of the whole block is allowed)")
        return Problem(line.number, f"line is not in the diff{where}")
    return Problem(line.number, f"line does not follow the previous excerpt line in the diff{where}; "
                                "mark the skip with a '...' line")

"""`dossier check`: run the rules, apply suppressions and filters, format findings."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .kb import KnowledgeBase
from .errors import DossierError
from .forked import Forked, worth_forking
from .rules import RULES, Finding


def _selected(code: str, select: list[str] | None, ignore: list[str] | None) -> bool:
    if select and not any(code.startswith(s) for s in select):
        return False
    if ignore and any(code.startswith(i) for i in ignore):
        return False
    return True


def _validate_codes(prefixes: list[str] | None) -> None:
    for p in prefixes or []:
        if not any(code.startswith(p) for code in RULES):
            raise DossierError(f"unknown rule code or prefix {p!r}; see `dossier rule --list`")


def _run(rule, ctx, card=None) -> list[Finding]:
    """Run one rule; a crash inside a rule becomes one tool-error line, not a traceback."""
    try:
        return list(rule.func(ctx, card) if card is not None else rule.func(ctx))
    except DossierError:
        raise
    except Exception as exc:  # noqa: BLE001 - report any rule bug as one line
        where = f" on {ctx.rel(card.path)}" if card is not None else ""
        return [Finding(ctx.rel(card.path) if card is not None else "dossier.toml", 1, 1, "X000",
                        f"internal error in rule {rule.code}{where}: {type(exc).__name__}: {exc}")]


def _timed(times: dict, side: str):
    """A `_run` that adds each call's CPU time (the calling thread's) to times[(code, side)]."""
    def run(rule, ctx, card=None):
        start = time.thread_time()
        try:
            return _run(rule, ctx, card)
        finally:
            key = (rule.code, side)
            times[key] = times.get(key, 0.0) + time.thread_time() - start
    return run


def _turned_off(card) -> frozenset:
    """The codes a card turns off: a `noqa: {CODE: reason}` entry with a written reason (15+
    characters); S007, the rule that checks those reasons, cannot be turned off."""
    noqa = (card.meta or {}).get("noqa")
    if not isinstance(noqa, dict):
        return frozenset()
    return frozenset(code for code, reason in noqa.items()
                     if code != "S007" and isinstance(reason, str) and len(reason.strip()) >= 15)


def _prefetch(ctx, name: str, times: dict | None = None) -> None:
    """Compute one KnowledgeBase property ahead of the rule that reads it; a failure is left
    for that rule to meet again (and report) when it reads the property itself."""
    start = time.thread_time()
    try:
        getattr(ctx, name)
    except Exception:  # noqa: BLE001 - not cached, so the reading rule computes it and reports
        pass
    if times is not None:
        times[(f"prefetch {name}", "thread")] = time.thread_time() - start


def _send_ahead(rule, ctx) -> None:
    """A rule's requests sent to the lane subprocess before the cards load; a failure is
    left for the rule to meet again (and report) when it runs."""
    try:
        rule.ahead(ctx)
    except Exception:  # noqa: BLE001 - nothing sent; the rule asks (and reports) itself
        pass


# Which process runs a rule when `check` splits over two cores. The parent keeps:
# - the rules that read the locks (15 MB of JSON at 700 cards, read once, on its side):
#   the G rules and _READS_LOCKS;
# - the rules that read the playbook, supersession.json, the radar, the release listings
#   or the lane registry: B001 parses all of them there anyway, to render the generated
#   files, so each is parsed in one process only;
# - the rules that read what its lane threads compute (prefetch, background).
# The forked child takes every other rule, the prose rules' cross-card sentence and
# shingle indexes among them; each side then has about 1.2 s of CPU in a cold 700-card
# run. A rule on the wrong side costs time, never findings.
_READS_LOCKS = frozenset({"B001", "B002", "B003", "K006", "L005", "L006", "L013", "L014", "L030", "L032",
                          "P004", "R004", "S004", "S008"})
_READS_WHAT_B001_READS = frozenset({"K007", "L001", "L002", "L003", "L004", "L007", "L008", "L010", "L011",
                                    "L015", "L016", "L031", "L035", "P005", "R001", "R002", "R003", "R005",
                                    "R006", "R007"})
FORK_MIN_CARDS = 100  # below this the two halves take less than a fork and its results cost


def _in_child(r) -> bool:
    return not (r.prefetch or r.background or r.code.startswith("G") or r.code in _READS_LOCKS
                or r.code in _READS_WHAT_B001_READS)


def _run_rules(ctx, cards, card_rules, project_rules, run=_run) -> list[Finding]:
    """Card rules over every card, then project rules. Rules that read prefetched data go
    after every other rule on every card: run per card in turn, the first card would wait
    for the subprocesses with one core idle."""
    out: list[Finding] = []
    for batch in ([r for r in card_rules if not r.prefetch], [r for r in card_rules if r.prefetch]):
        for card in cards:
            off = _turned_off(card)
            for r in batch:
                if r.code not in off:
                    out.extend(run(r, ctx, card))
    for r in project_rules:
        out.extend(run(r, ctx))
    return out


@dataclass
class Timings:
    """What `check --timings` reports. `cpu`: CPU seconds under (step, process), the step a
    rule code, "reading cards" or "prefetch NAME" (a property computed ahead in a thread),
    the process "parent", "child" (the forked share) or "thread" (in a thread of the
    parent); a rule's time includes what it is the first to compute (G001's, reading the
    locks). `wall`: when each stage ended (time.perf_counter, a clock the child shares)."""
    cpu: dict = field(default_factory=dict)
    wall: dict = field(default_factory=dict)


def _in_child_timed(ctx, cards, card_rules, project_rules, timing: bool):
    """The child's share: its findings and, when timing, its rules' CPU times and end."""
    times: dict = {}
    run = _timed(times, "child") if timing else _run
    found = _run_rules(ctx, cards, card_rules, project_rules, run)
    return found, times, time.perf_counter()


def run_check(ctx: KnowledgeBase, select=None, ignore=None, timings: Timings | None = None) -> list[Finding]:
    """The findings of the selected rules; with `timings`, what each step cost (see Timings)."""
    timing = timings is not None
    times = timings.cpu if timing else None
    wall = timings.wall if timing else {}  # marks cost a clock read each: kept, then dropped
    run = _timed(times, "parent") if timing else _run
    _validate_codes(select)
    _validate_codes(ignore)
    findings: list[Finding] = []
    card_rules = [r for r in RULES.values() if r.scope == "card" and _selected(r.code, select, ignore)]
    project_rules = [r for r in RULES.values() if r.scope == "project" and _selected(r.code, select, ignore)]
    if ctx.card_paths is not None:
        # PATHS: only findings on those cards and their locks are reported (see the end), so
        # of the project rules only those that may report on a card run (Rule.on_cards).
        project_rules = [r for r in project_rules if r.on_cards]
    prefetch = list(dict.fromkeys(n for r in card_rules + project_rules for n in r.prefetch))
    background_rules = [r for r in project_rules if r.background]
    if prefetch or background_rules:
        # The lane subprocess imports the lane scripts on the other core while cards load.
        ctx.start_lane_interpreter_if_cold()
        for r in card_rules + project_rules:
            if r.ahead is not None:
                _send_ahead(r, ctx)
    start = time.thread_time()
    cards, unreadable = ctx.loaded
    if timing:
        times[("reading cards", "parent")] = time.thread_time() - start
        wall["cards read"] = time.perf_counter()
    for path, why in unreadable:
        if _selected("S001", select, ignore):
            findings.append(Finding(ctx.rel(path), 1, 1, "S001", why))
    project_rules = [r for r in project_rules if not r.background]
    child = None
    if worth_forking(len(cards), FORK_MIN_CARDS) and any(_in_child(r) for r in card_rules + project_rules):
        # Before any thread starts (see dossier.forked): the child takes its share of the rules.
        child_card = [r for r in card_rules if _in_child(r)]
        child_project = [r for r in project_rules if _in_child(r)]
        card_rules = [r for r in card_rules if not _in_child(r)]
        project_rules = [r for r in project_rules if not _in_child(r)]
        child = (Forked(lambda: _in_child_timed(ctx, cards, child_card, child_project, timing)), child_card, child_project)
        wall["forked"] = time.perf_counter()
    # Subprocess waits (lane dry-runs, lane option probes) in threads: on the other core
    # they cost no wall time while the rules run.
    background = []
    for name in prefetch:
        thread = threading.Thread(target=_prefetch, args=(ctx, name, times), daemon=True)
        thread.start()
        background.append((thread, []))
    for r in background_rules:
        box: list = []
        in_thread = _timed(times, "thread") if timing else _run
        thread = threading.Thread(target=lambda r=r, box=box, run=in_thread: box.extend(run(r, ctx)), daemon=True)
        thread.start()
        background.append((thread, box))
    findings.extend(_run_rules(ctx, cards, card_rules, project_rules, run))
    wall["parent's rules done"] = time.perf_counter()
    if child is not None:
        forked, child_card, child_project = child
        got = forked.result()
        if got is not None:
            findings.extend(got[0])
            if timing:
                times.update(got[1])
            wall["child's rules done"] = got[2]
        else:  # a child that failed in any way: its share runs here, so no finding is lost
            findings.extend(_run_rules(ctx, cards, child_card, child_project, run))
            wall["child's share done here"] = time.perf_counter()
    for thread, box in background:
        thread.join()
        findings.extend(box)
    wall["threads done"] = time.perf_counter()
    ctx.close_lane_interpreter()
    if ctx.card_paths is not None:
        # With PATHS, report only on those files and their locks, like a linter run on one file.
        wanted = {ctx.rel(p) for p in ctx.card_paths}
        wanted |= {ctx.rel(p).replace("references/cards/", "references/evidence/")[:-3] + ".json"
                   for p in ctx.card_paths if str(p).endswith(".md")}
        findings = [f for f in findings if f.path in wanted]
    return sorted(set(findings))


def format_times(timings: Timings, before: float | None = None, started: float | None = None) -> str:
    """The `--timings` table: CPU seconds per rule (and per step) and process, slowest first,
    then each process's total and, from `started` (the command's perf_counter at its start),
    when each stage ended; `before` is the CPU the command spent before the check."""
    times = timings.cpu
    rows = sorted(times.items(), key=lambda kv: (-kv[1], kv[0]))
    lines = ["timings (CPU seconds of the thread that ran each; a rule's time includes what it is "
             "the first to compute, e.g. G001 reading the locks):"]
    if before is not None:
        lines.append(f"  {'interpreter start and imports':<34} {before:6.3f}  parent")
    lines += [f"  {name:<34} {sec:6.3f}  {side}" for (name, side), sec in rows if sec >= 0.0005]
    totals: dict[str, float] = {}
    for (_, side), sec in times.items():
        totals[side] = totals.get(side, 0.0) + sec
    lines.append("  totals: " + ", ".join(f"{side} {sec:.3f}" for side, sec in sorted(totals.items())))
    if started is not None and timings.wall:
        marks = sorted(timings.wall.items(), key=lambda kv: kv[1])
        lines.append("  wall clock, seconds since the command started: "
                     + ", ".join(f"{name} {at - started:.3f}" for name, at in marks))
    return "\n".join(lines)


def format_findings(findings: list[Finding], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([f.as_dict() for f in findings], indent=1)
    if fmt == "github":
        out = []
        for f in findings:
            msg = f.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            out.append(f"::error file={f.path},line={f.line},col={f.col},title={f.code}::{f.code} {msg}")
        return "\n".join(out)
    lines = [f"{f.path}:{f.line}:{f.col}: {f.code} {f.message}" for f in findings]
    if findings:
        lines.append(f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''}.")
    return "\n".join(lines)


def card_paths_from_args(ctx: KnowledgeBase, paths: tuple[str, ...]) -> list[Path] | None:
    """Expand PATHS (cards or folders) into card files; None means the whole knowledge base.

    A path that is no card of this knowledge base is an error, not a silent "All checks passed".
    """
    if not paths:
        return None
    cards_dir = ctx.config.cards_dir.resolve()

    def is_card(p: Path) -> bool:
        return p.suffix == ".md" and (p.parent.resolve() / p.name).parent.parent == cards_dir

    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists() and not p.is_symlink():
            raise DossierError(f"{raw}: no such file or folder")
        if p.is_dir() and not p.is_symlink():
            found = [c for c in sorted(p.rglob("*.md")) if is_card(c)]
            if not found:
                raise DossierError(f"{raw}: no cards in this folder (cards are {ctx.rel(ctx.config.cards_dir)}/<repo>/<pr>.md)")
            out.extend(found)
        elif is_card(p):
            out.append(p)
        else:
            raise DossierError(f"{raw}: not a card of this knowledge base "
                               f"(cards are {ctx.rel(ctx.config.cards_dir)}/<repo>/<pr>.md)")
    return out

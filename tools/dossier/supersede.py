"""What superseded what: which later PRs moved, rewrote, reverted or removed the lines each card's PR added.

One walk of the first-parent history (oldest first, `git log -p -U0`) over every file
the cards' PRs touched plus the families' files at the pinned SHA. A card's added
lines (hashes from its lock, trivial lines left out) become live when its commit is
reached; a later commit that removes one of them, without adding the same line back
anywhere in that commit, takes that much of the card. What it did with them is decided
per commit (`fate.py`): reverted (a revert of the card's commit), moved (the lines,
whitespace aside, or the symbols that held them stand in another file or symbol at the
pin: `path::symbol`), rewritten (the symbols survive in place with other lines), or gone.
The result, `references/supersession.json`, is stamped with the pinned SHA and each
card's lock digest, so a re-fetched lock or a new card makes it stale (rule B002).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from .config import Config
from .errors import DossierError
from .evidence import file_lines, line_hash, load_lock
from .fsio import read_text, write_atomic
from .trace import LIVE_THRESHOLD, _TRIVIAL, resolve_ref

SUPERSESSION = "references/supersession.json"
SCHEMA = 2
_SEP = "\x1f"
# A superseding commit that took this many lines or fewer of a card (of more than
# INCIDENTAL_MIN_CARD lines) is an incidental touch: counted, not listed.
INCIDENTAL_LINES = 2
INCIDENTAL_MIN_CARD = 4


def _cards(config: Config, repo: str) -> dict[int, dict]:
    out = {}
    for card in sorted((config.cards_dir / repo).glob("*.md")):
        if not card.stem.isdigit():
            continue
        lock_path = config.lock_path(repo, int(card.stem))
        if lock_path.exists():
            out[int(card.stem)] = load_lock(lock_path)
    return out


def _paths(config: Config, repo: str, locks: dict[int, dict], tree: list[str]) -> list[str]:
    paths = {f["path"] for lock in locks.values() for f in lock["files"] if not f.get("binary")}
    paths |= {f["old_path"] for lock in locks.values() for f in lock["files"] if f.get("old_path")}
    paths |= {p for p in tree if any(fam.matches(repo, p) for fam in config.families.values())}
    return sorted(paths)


def _walk(history, ref: str, paths: list[str]):
    """One `_Commit` per first-parent commit touching paths, oldest first."""
    proc = history.repo.git.log("--first-parent", "--reverse", "-p", "-U0", "--no-color", "--no-renames",
                                f"--format=\x1e%H{_SEP}%P{_SEP}%aI{_SEP}%s", ref, "--", *paths,
                                as_process=True, stdout_as_string=False)
    buf = b""
    for chunk in iter(lambda: proc.proc.stdout.read(1 << 20), b""):
        buf += chunk
        *blocks, buf = buf.split(b"\x1e")
        for block in blocks:
            if block:
                yield _parse(block)
    if buf.strip():
        yield _parse(buf)
    proc.wait()


class _Commit:
    """One commit of the walk: its line hashes, and per file the lines it removed (text kept only
    until the commit is classified)."""

    __slots__ = ("sha", "parent", "date", "subject", "added", "removed", "files")


    def __init__(self, sha, parent, date, subject):
        self.sha, self.parent, self.date, self.subject = sha, parent, date, subject
        self.added, self.removed = Counter(), Counter()
        self.files: dict[str, list] = {}  # old path -> [(old line number, hash, text)] removed


def _parse(block: bytes) -> _Commit:
    text = block.decode("utf-8", "surrogateescape")
    head, _, body = text.partition("\n")
    sha, parents, date, subject = head.split(_SEP, 3)
    c = _Commit(sha, (parents.split() or [None])[0], date[:10], subject)
    old, old_no, in_header = None, 0, False
    for line in body.split("\n"):
        if line.startswith("diff --git "):
            in_header, old = True, None
        elif in_header and line.startswith("--- "):
            old = c.files.setdefault(line[6:], []) if line.startswith("--- a/") else None
        elif line.startswith("@@"):
            in_header = False
            try:
                old_no = int(line.split()[1][1:].split(",")[0])
            except (IndexError, ValueError):
                old_no = 0
        elif in_header:
            continue
        elif line.startswith("+"):
            c.added[line_hash("+", line[1:])] += 1
        elif line.startswith("-"):
            h = line_hash("+", line[1:])  # compared with the cards' '+' hashes
            c.removed[h] += 1
            if old is not None:
                old.append((old_no, h, line[1:]))
            old_no += 1
    return c


def compute(config: Config, repo: str, clone: str, ref: str | None = None) -> dict:
    from .evidence import lock_digest
    from .fate import Fates
    from .sources.git import History, open_clone, pr_from_subject

    history = History(open_clone(clone), resolve_ref(config, repo, ref))
    head = history._resolve_ref()
    locks = _cards(config, repo)
    by_commit = {lock["source"]["commit"]: pr for pr, lock in locks.items() if lock.get("source", {}).get("commit")}
    added_by_card = {pr: Counter(h for f in lock["files"] for h in file_lines(f) if h.startswith("+") and h not in _TRIVIAL)
                     for pr, lock in locks.items()}
    fates = Fates(history, head)
    live: dict[int, Counter] = {}
    file_moves: dict[int, dict[str, Counter]] = defaultdict(dict)
    superseded: dict[int, dict[int | str, dict]] = defaultdict(dict)
    for c in _walk(history, head, _paths(config, repo, locks, history.tree_paths(head))):
        pr = by_commit.get(c.sha)
        if pr is not None:
            live[pr] = Counter(added_by_card[pr])
        gone = c.removed - c.added  # a line removed here and added back elsewhere moved; it did not go
        if not gone:
            continue
        who = pr_from_subject(c.subject) or c.sha[:12]
        for card, alive in live.items():
            if card == pr:
                continue
            taken = {h: min(n, alive[h]) for h, n in gone.items() if alive[h]}
            if not taken:
                continue
            for h, n in taken.items():
                alive[h] -= n
            lock = locks[card]
            how = fates.classify(c, taken, card, lock.get("title", ""), lock.get("source", {}).get("commit", ""))
            entry = superseded[card].setdefault(who, {"pr": who if isinstance(who, int) else None, "commit": c.sha[:12],
                                                       "date": c.date, "title": c.subject, "lines": 0, "how": {},
                                                       "to": Counter(), "moved": Counter()})
            entry["lines"] += sum(taken.values())
            for k, n in how["lines"].items():
                entry["how"][k] = entry["how"].get(k, 0) + n
            entry["to"].update(how["to"])
            entry["moved"].update(how["moved"])
            for old, new in how["files"].items():
                file_moves[card].setdefault(old, Counter()).update(new)
    cards = {}
    for pr, lock in sorted(locks.items()):
        total = sum(added_by_card[pr].values())
        present = sum(live.get(pr, Counter()).values()) if pr in live else None
        by = sorted(superseded.get(pr, {}).values(), key=lambda e: (-e["lines"], e["date"]))
        carried = Counter()
        for e in by:
            carried.update(e["how"])
        out = {"added": total, "present": present, "lock": lock_digest(lock)[:16],
               "state": card_state(total, present, carried)}
        if carried:
            out["carried"] = dict(sorted(carried.items()))
        moved_to = Counter()
        for e in by:
            moved_to.update(e["moved"])
        if moved_to:
            out["moved_to"] = [t for t, _ in moved_to.most_common(5)]
        if file_moves.get(pr):
            out["moved_files"] = {old: new.most_common(1)[0][0] for old, new in sorted(file_moves[pr].items())}
        reverts = [e["pr"] for e in by if e["how"].get("reverted") and e.get("pr")]
        if reverts:
            out["reverted_by"] = reverts[0]
        listed, folded = [], []
        for e in by:
            e = {**{k: v for k, v in e.items() if k != "moved"}, "how": _main(e["how"]),
                 "to": [t for t, _ in e["to"].most_common(3)]}
            small = e["lines"] <= INCIDENTAL_LINES and total > INCIDENTAL_MIN_CARD and e["how"] != "reverted"
            (folded if small else listed).append({k: v for k, v in e.items() if v not in (None, [])})
        out["superseded_by"] = listed
        if folded:
            out["incidental"] = {"prs": len(folded), "lines": sum(e["lines"] for e in folded)}
        cards[str(pr)] = out
    return {"ref": head, "cards": cards}


def _main(how: dict) -> str:
    """What a superseding commit mostly did with a card's lines."""
    return max(how.items(), key=lambda kv: (kv[1], kv[0] == "reverted"))[0] if how else "gone"


def card_state(total: int, present: int | None, carried: Counter | dict) -> str:
    """live, moved, rewritten, reverted, partly superseded or gone: where a card's added lines are at the pin.

    Exact lines first (at least LIVE_THRESHOLD of them standing: live); then what the
    superseding commits did with the rest: most of it reverted is `reverted`; the lines
    still carried (standing, moved or rewritten) reaching the threshold is `moved` or
    `rewritten`, whichever took more; nothing carried is `gone`; a mix is partly superseded.
    """
    if present is None:
        return "not on history"
    if total == 0:
        return "n/a"
    if present / total >= LIVE_THRESHOLD:
        return "live"
    absent = total - present
    moved, rewritten, reverted = (carried.get(k, 0) for k in ("moved", "rewritten", "reverted"))
    if reverted and reverted * 2 >= absent:
        return "reverted"
    if (present + moved + rewritten) / total >= LIVE_THRESHOLD:
        return "moved" if moved >= rewritten else "rewritten"
    if present == 0 and moved + rewritten == 0:
        return "gone"
    return "partly superseded"


def load(root: Path) -> dict:
    path = root / SUPERSESSION
    if not path.exists():
        return {"schema": SCHEMA, "repos": {}}
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DossierError(f"{SUPERSESSION}: broken JSON at line {exc.lineno}: {exc.msg}") from None
    return data if isinstance(data, dict) else {"schema": SCHEMA, "repos": {}}


def write(root: Path, repo: str, result: dict) -> Path:
    data = load(root)
    data["schema"] = SCHEMA
    data.setdefault("repos", {})[repo] = result
    path = root / SUPERSESSION
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def for_card(root: Path, card_id: str, data: dict | None = None) -> dict | None:
    """The supersession entry of `repo/pr`, or None when it was never computed."""
    repo, _, pr = card_id.partition("/")
    data = data if data is not None else load(root)
    return data.get("repos", {}).get(repo, {}).get("cards", {}).get(pr)


def significant(entry: dict | None, min_share: float = 0.05) -> list[dict]:
    """Superseding PRs that took at least 2 lines (1 for a one-line card) and 5% of the card's added lines."""
    if not entry:
        return []
    added = entry.get("added") or 0
    floor = max(min(2, max(added, 1)), min_share * added)
    return [e for e in entry.get("superseded_by", []) if e["lines"] >= floor or e.get("how") == "reverted"]


def moved_files(data: dict, repo: str) -> dict[str, str]:
    """Old path -> the path most of its moved card lines went to, over every card of `repo`."""
    votes: dict[str, Counter] = defaultdict(Counter)
    for entry in data.get("repos", {}).get(repo, {}).get("cards", {}).values():
        for old, new in (entry.get("moved_files") or {}).items():
            votes[old][new] += 1
    return {old: c.most_common(1)[0][0] for old, c in votes.items()}


def live_fields(entry: dict) -> dict:
    """What `trace --live` adds to a card's row from its supersession entry."""
    by = significant(entry)
    out = {"state": entry["state"], "superseded_by": [e.get("pr") or e["commit"] for e in by]}
    if entry.get("present") is not None:
        out["standing"] = entry["present"]  # lines still at the pin anywhere (git-exact moves kept), not only in the card's files
    for key in ("moved_to", "reverted_by", "carried", "incidental"):
        if entry.get(key):
            out[key] = entry[key]
    if entry["state"] == "rewritten" and by and by[0].get("to"):
        out["rewritten_in"] = by[0]["to"]
    return out


def summary(entry: dict | None, brief: bool = False) -> str:
    """One phrase for a card's state at the pin: "moved to a.py::f by #3", "reverted by #9", ...

    `brief` (the playbook): one new place, two PRs, no count of incidental touches.
    """
    if not entry:
        return ""
    state = entry["state"]
    by = significant(entry)
    if state == "reverted" and entry.get("reverted_by"):
        return f"reverted by #{entry['reverted_by']}"
    text = state
    if state == "moved" and entry.get("moved_to"):
        text += " to " + ", ".join(entry["moved_to"][:1 if brief else 2])
    if by and state != "live":
        text += (" by " if state in ("moved", "rewritten") else ", superseded by ") + \
            ", ".join(label(e) for e in by[:2 if brief else 4])
    inc = entry.get("incidental")
    if inc and state != "live" and not brief:
        text += f" (+{inc['prs']} incidental touches)"
    return text


def label(e: dict) -> str:
    return f"#{e['pr']}" if e.get("pr") else e["commit"]

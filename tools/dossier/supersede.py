"""What superseded what: which later PRs removed or rewrote the lines each card's PR added.

One walk of the first-parent history (oldest first, `git log -p -U0`) over every file
the cards' PRs touched plus the families' files at the pinned SHA. A card's added
lines (hashes from its lock, trivial lines left out) become live when its commit is
reached; a later commit that removes one of them, without adding the same line back
anywhere in that commit (a move), supersedes that much of the card. The result,
`references/supersession.json`, is stamped with the pinned SHA and each card's lock
digest, so a re-fetched lock or a new card makes it stale (rule B002).
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
SCHEMA = 1
_SEP = "\x1f"


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
    """(sha, subject, added hashes, removed hashes) per first-parent commit touching paths, oldest first."""
    proc = history.repo.git.log("--first-parent", "--reverse", "-p", "-U0", "--no-color", "--no-renames",
                                f"--format=\x1e%H{_SEP}%aI{_SEP}%s", ref, "--", *paths,
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


def _parse(block: bytes):
    text = block.decode("utf-8", "surrogateescape")
    head, _, body = text.partition("\n")
    sha, date, subject = head.split(_SEP, 2)
    added, removed = Counter(), Counter()
    for line in body.split("\n"):
        if line.startswith("+") and not line.startswith("+++"):
            added[line_hash("+", line[1:])] += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed[line_hash("+", line[1:])] += 1  # compared with the cards' '+' hashes
    return sha, date[:10], subject, added, removed


def compute(config: Config, repo: str, clone: str, ref: str | None = None) -> dict:
    from .evidence import lock_digest
    from .sources.git import History, open_clone, pr_from_subject

    history = History(open_clone(clone), resolve_ref(config, repo, ref))
    head = history._resolve_ref()
    locks = _cards(config, repo)
    by_commit = {lock["source"]["commit"]: pr for pr, lock in locks.items() if lock.get("source", {}).get("commit")}
    added_by_card = {pr: Counter(h for f in lock["files"] for h in file_lines(f) if h.startswith("+") and h not in _TRIVIAL)
                     for pr, lock in locks.items()}
    live: dict[int, Counter] = {}
    superseded: dict[int, dict[int | str, dict]] = defaultdict(dict)
    for sha, date, subject, added, removed in _walk(history, head, _paths(config, repo, locks, history.tree_paths(head))):
        pr = by_commit.get(sha)
        if pr is not None:
            live[pr] = Counter(added_by_card[pr])
        gone = removed - added  # a line removed here and added back elsewhere moved; it did not go
        if not gone:
            continue
        who = pr_from_subject(subject) or sha[:12]
        for card, alive in live.items():
            if card == pr:
                continue
            hit = sum(min(n, alive[h]) for h, n in gone.items() if alive[h])
            if not hit:
                continue
            for h, n in gone.items():
                if alive[h]:
                    alive[h] -= min(n, alive[h])
            entry = superseded[card].setdefault(who, {"pr": who if isinstance(who, int) else None, "commit": sha[:12],
                                                       "date": date, "title": subject, "lines": 0})
            entry["lines"] += hit
    cards = {}
    for pr, lock in sorted(locks.items()):
        total = sum(added_by_card[pr].values())
        present = sum(live.get(pr, Counter()).values()) if pr in live else None
        if pr not in live:
            state = "not on history"
        elif total == 0:
            state = "n/a"
        else:
            share = present / total
            state = "live" if share >= LIVE_THRESHOLD else "gone" if present == 0 else "partly superseded"
        by = sorted(superseded.get(pr, {}).values(), key=lambda e: (-e["lines"], e["date"]))
        cards[str(pr)] = {"added": total, "present": present, "state": state, "lock": lock_digest(lock)[:16],
                          "superseded_by": [{k: v for k, v in e.items() if v is not None} for e in by]}
    return {"ref": head, "cards": cards}


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
    return [e for e in entry.get("superseded_by", []) if e["lines"] >= floor]


def label(e: dict) -> str:
    return f"#{e['pr']}" if e.get("pr") else e["commit"]

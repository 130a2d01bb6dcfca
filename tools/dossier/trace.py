"""`dossier trace`: which PRs touched a family's files, and which have cards."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .config import Config
from .errors import DossierError
from .evidence import file_lines, line_hash, load_lock
from .fsio import read_text, yaml_loader

EXCLUSIONS = "references/trace-exclusions.yaml"
LIVE_THRESHOLD = 0.8
# Lines so common that finding them in HEAD proves nothing about a card's code.
# Hashes keep indentation, so each trivial line is hashed at every common depth.
_TRIVIAL = {line_hash("+", " " * depth + t) for depth in range(0, 41)
            for t in ("", ")", "]", "}", "),", "],", "else:", "pass", "return", "try:",
                      "return None", "else", "break", "continue", "finally:", '"""', "):")}


@dataclass
class TraceRow:
    repo: str
    pr: int | None
    commit: str
    date: str
    title: str
    families: list[str]
    files: list[str]
    status: str  # "card" | "excluded" | "missing"
    reason: str = ""
    live: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", {}) or k in ("pr",)}


def load_exclusions(root: Path) -> dict[tuple[str, int], str]:
    path = root / EXCLUSIONS
    if not path.exists():
        return {}
    try:
        data = yaml.load(Loader=yaml_loader(), stream=read_text(path)) or []
    except yaml.YAMLError as exc:
        raise DossierError(f"{EXCLUSIONS}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    out = {}
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and "repo" in entry and "pr" in entry:
            out[(str(entry["repo"]), int(entry["pr"]))] = str(entry.get("reason") or "")
    return out


def trace(config: Config, repo: str, clone: str, families: list[str], ref: str = "HEAD",
          live: bool = False) -> list[TraceRow]:
    from .sources.git import History, open_clone, pr_from_subject

    config.repo(repo)
    for name in families:
        if name not in config.families:
            raise DossierError(f"unknown family {name!r} (known: {', '.join(config.families)})")
    fams = [config.families[n] for n in families]
    globs = sorted({g for f in fams for g in f.globs.get(repo, ())})
    if not globs:
        return []
    history = History(open_clone(clone), ref)
    exclusions = load_exclusions(config.root)
    rows = []
    for sha, date, subject, files in history.log_paths(globs):
        pr = pr_from_subject(subject)
        hit = [f.name for f in fams if any(f.matches(repo, p) for p in files)]
        matched = [p for p in files if any(f.matches(repo, p) for f in fams)]
        if not hit:
            continue
        if pr is not None and config.card_path(repo, pr).exists():
            status, reason = "card", ""
        elif pr is not None and (repo, pr) in exclusions:
            status, reason = "excluded", exclusions[(repo, pr)]
        else:
            status, reason = "missing", ""
        title = subject.rsplit(f"(#{pr})", 1)[0].strip() if pr else subject
        rows.append(TraceRow(repo, pr, sha[:12], date, title, hit, matched, status, reason))
    if live:
        for row in rows:
            if row.status == "card":
                row.live = liveness(config, history, repo, row.pr)
    return rows


def liveness(config: Config, history, repo: str, pr: int) -> dict:
    """How much of what the PR added still stands in the clone's HEAD."""
    lock = load_lock(config.lock_path(repo, pr))
    total = found = 0
    for f in lock["files"]:
        added = [h for h in file_lines(f) if h.startswith("+") and h not in _TRIVIAL]
        if not added:
            continue
        blob = history.file_at(history.ref, f["path"])
        present = set()
        if blob is not None:
            for line in blob.decode("utf-8", "surrogateescape").splitlines():
                present.add(line_hash("+", line))
        total += len(added)
        found += sum(1 for h in added if h in present)
    if total == 0:
        return {"state": "n/a", "added": 0, "present": 0}
    share = found / total
    state = "live" if share >= LIVE_THRESHOLD else "gone" if found == 0 else "partly superseded"
    return {"state": state, "added": total, "present": found, "share": round(share, 3)}

"""`dossier trace`: which PRs touched a family's files, and which have cards."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path


from .config import Config, glob_match
from .errors import DossierError
from .evidence import file_lines, line_hash, load_lock
from .yamlio import read_yaml

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
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: v for k, v in values.items() if v not in (None, "", {}) or k in ("pr",)}


def read_exclusions(root: Path):
    """The exclusions file as written (a LinedList, or whatever else it holds); None when absent."""
    path = root / EXCLUSIONS
    return read_yaml(path, EXCLUSIONS) if path.exists() else None


def load_exclusions(root: Path, data=None) -> dict[tuple[str, int | str], str]:
    """(repo, PR number) -> reason; commits that landed with no PR number are keyed by (repo, sha prefix)."""
    data = read_exclusions(root) if data is None else data
    out = {}
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and "repo" in entry and "pr" in entry:
            out[(str(entry["repo"]), int(entry["pr"]))] = str(entry.get("reason") or "")
        elif isinstance(entry, dict) and "repo" in entry and entry.get("commit"):
            out[(str(entry["repo"]), str(entry["commit"])[:12])] = str(entry.get("reason") or "")
    return out


def resolve_ref(config: Config, repo: str, ref: str | None) -> str:
    """The ref to read: what was asked, else the repo's pinned SHA, else HEAD."""
    return ref or config.repo(repo).pinned or "HEAD"


def trace(config: Config, repo: str, clone: str, families: list[str], ref: str | None = None,
          live: bool = False) -> list[TraceRow]:
    from .sources.git import History, open_clone, pr_from_subject

    config.repo(repo)
    for name in families:
        if name not in config.families:
            raise DossierError(f"unknown family {name!r} (known: {', '.join(config.families)})")
    fams = [config.families[n] for n in families]
    former = [f for fam in fams for f in fam.former if f.repo == repo]
    globs = sorted({g for f in fams for g in f.globs.get(repo, ())} | {g for f in former for g in f.globs})
    if not globs:
        return []
    history = History(open_clone(clone), resolve_ref(config, repo, ref))
    # A former path counts only for commits at or before the PR that moved it away.
    until_commit = {}
    for f in former:
        hit = history.index().get(f.until)
        if hit is None:
            raise DossierError(f"former paths of {f.globs[0]}: PR #{f.until} is not on the history of {history.ref}")
        until_commit[hit.commit] = f.until
    exclusions = load_exclusions(config.root)
    rows, active = [], set()
    for sha, date, subject, files in history.log_paths(globs):  # newest first
        if sha in until_commit:
            active.add(until_commit[sha])
        pr = pr_from_subject(subject)

        def counts(fam, path):
            if fam.matches(repo, path):
                return True
            return any(not f.symbols or history.touches_symbols(sha, path, f.symbols)
                       for f in fam.former_for(repo, path, active))

        hit = [f.name for f in fams if any(counts(f, p) for p in files)]
        matched = [p for p in files if any(counts(f, p) for f in fams)]
        if not hit:
            continue
        if pr is not None and config.card_path(repo, pr).exists():
            status, reason = "card", ""
        elif pr is not None and (repo, pr) in exclusions:
            status, reason = "excluded", exclusions[(repo, pr)]
        elif pr is None and (repo, sha[:12]) in exclusions:
            status, reason = "excluded", exclusions[(repo, sha[:12])]
        else:
            status, reason = "missing", ""
        title = subject.rsplit(f"(#{pr})", 1)[0].strip() if pr else subject
        rows.append(TraceRow(repo, pr, sha[:12], date, title, hit, matched, status, reason))
    if live:
        for row in rows:
            if row.status == "card":
                row.live = liveness(config, history, repo, row.pr)
    return rows


def suggest_renames(config: Config, repo: str, clone: str, families: list[str], ref: str | None = None) -> list[dict]:
    """Renames git detects behind each family's globs, not yet declared as former paths.

    An exact path is followed back with `git log --follow`; a pattern (`dir/**`) by the
    first-parent renames whose new path it matches, from one walk over its directory."""
    from .sources.git import History, open_clone

    history = History(open_clone(clone), resolve_ref(config, repo, ref))
    out = []
    for name in families:
        fam = config.families[name]
        declared = {g for f in fam.former if f.repo == repo for g in f.globs}

        def undeclared(old: str) -> bool:
            return (old not in declared and not fam.matches(repo, old)
                    and not any(glob_match(old, g) for g in declared))

        for glob in fam.globs.get(repo, ()):
            if not any(c in glob for c in "*?["):
                renames = history.renames(glob)
            else:
                renames = [r for r in history.all_renames() if glob_match(r[1], glob)]
            for old, new, pr, date in renames:
                if undeclared(old):
                    out.append({"family": name, "path": glob if glob == new else new, "old_path": old,
                                "renamed_to": new, "until": pr, "date": date})
    return out


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

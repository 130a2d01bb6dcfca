"""`dossier fetch`: write evidence locks from a git clone or a saved diff."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from .config import Config
from .errors import DossierError
from .cards import TEST_REF, classify_file
from .evidence import build_lock, defined_names, lock_digest, write_lock
from .fsio import read_text
from .sources.git import History, open_clone, pr_meta


@dataclass
class FetchResult:
    pr: int
    path: Path | None = None
    error: str | None = None
    changed: bool = False


def lock_from_git(config: Config, repo: str, history: History, pr: int, known: str | None = None) -> dict:
    """The lock of `pr` built from the clone; `known` is the commit an earlier lock recorded
    (History.find falls back to it)."""
    reg = config.repo(repo)
    pc = history.find(pr, known)
    diff, notes = history.diff_bytes(pc)
    source = {"kind": "git", "commit": pc.commit, "parent": pc.parent, "ref_kind": pc.kind}
    lock = build_lock({**pr_meta(pc), "file_notes": notes}, diff, source, repo, reg.pr_url(pr))
    symbols = test_symbols(history, pc.commit, _test_paths(config, repo, pr, lock))
    if symbols:
        lock["test_symbols"] = symbols
        lock["lock_sha256"] = lock_digest(lock)
    return lock


def _test_paths(config: Config, repo: str, pr: int, lock: dict) -> list[str]:
    """Test files the lock should know the names of: those in the diff, and those the card cites."""
    paths = {f["path"] for f in lock["files"]
             if f["path"].endswith(".py") and f["status"] != "deleted" and classify_file(f["path"]) == "Tests"}
    card = config.card_path(repo, pr)
    if card.exists():
        try:
            text = read_text(card)
        except DossierError:
            text = ""
        paths.update(m.group(1) for m in TEST_REF.finditer(text))
    return sorted(paths)


def test_symbols(history: History, commit: str, paths: list[str]) -> dict[str, list[str]]:
    """Names each test file defines at the merge commit (no code); a missing file maps to []."""
    out = {}
    for path in paths:
        blob = history.file_at(commit, path)
        out[path] = defined_names(blob.decode("utf-8", "surrogateescape")) if blob is not None else []
    return out


def fetch_git(config: Config, repo: str, prs: list[int], clone: str, ref: str = "HEAD", progress=None) -> list[FetchResult]:
    config.repo(repo)
    history = History(open_clone(clone), ref)
    results = []
    for pr in prs:
        try:
            lock = lock_from_git(config, repo, history, pr)
            results.append(store_lock(config, repo, pr, lock))
        except DossierError as exc:
            results.append(FetchResult(pr, error=str(exc)))
        except git.GitCommandError as exc:  # anything else git refuses: one line, keep going
            detail = (exc.stderr or "").strip().splitlines()
            results.append(FetchResult(pr, error=f"git failed: {detail[-1] if detail else exc}"))
        if progress:
            progress(pr)
    return results


def store_lock(config: Config, repo: str, pr: int, lock: dict) -> FetchResult:
    path = config.lock_path(repo, pr)
    old = path.read_text(encoding="utf-8") if path.exists() else None
    from .evidence import dump_lock

    changed = old != dump_lock(lock)
    if changed:
        write_lock(path, lock)
    return FetchResult(pr, path, changed=changed)


def normalise_newlines(diff: bytes) -> bytes:
    """A diff saved with CRLF line ends (Windows, some web views) read as git wrote it, with LF.

    Only when the diff's own header lines end in CR: a file with CRLF content keeps its CRs.
    """
    headers = [l for l in diff.split(b"\n") if l.startswith((b"diff --git ", b"--- ", b"+++ ", b"@@ "))]
    if headers and all(l.endswith(b"\r") for l in headers):
        return diff.replace(b"\r\n", b"\n")
    return diff


def lock_from_diff(config: Config, repo: str, pr: int, diff: bytes, title: str, state: str,
                   merged: str | None = None, force: bool = False) -> FetchResult:
    """The lock of a saved diff. Replacing an existing, different lock needs `force`."""
    reg = config.repo(repo)
    if not diff.strip():
        raise DossierError("the diff is empty; nothing to lock")
    diff = normalise_newlines(diff)
    meta = {"pr": pr, "title": title, "state": state, "merged": merged}
    lock = build_lock(meta, diff, {"kind": "diff"}, repo, reg.pr_url(pr))
    if not lock["files"]:
        raise DossierError("no unified diff found in the input (expected `diff --git` or ---/+++ file headers)")
    path = config.lock_path(repo, pr)
    if not force and (path.exists() or path.is_symlink()):
        from .evidence import dump_lock

        old = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
        if old != dump_lock(lock):
            kind = _lock_kind(old)
            raise DossierError(f"{path.relative_to(config.root)}: a lock already exists{kind} and this diff would "
                               "replace it; pass --force to replace it")
    return store_lock(config, repo, pr, lock)


def _lock_kind(text: str | None) -> str:
    import json

    try:
        kind = json.loads(text or "").get("source", {}).get("kind")
    except (ValueError, AttributeError):
        return ""
    return f" (from {kind})" if kind else ""

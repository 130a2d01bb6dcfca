"""`dossier fetch`: write evidence locks from a git clone or a saved diff."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from .config import Config
from .errors import DossierError
from .evidence import build_lock, write_lock
from .sources.git import History, open_clone, pr_meta


@dataclass
class FetchResult:
    pr: int
    path: Path | None = None
    error: str | None = None
    changed: bool = False


def lock_from_git(config: Config, repo: str, history: History, pr: int) -> dict:
    reg = config.repo(repo)
    pc = history.find(pr)
    diff, notes = history.diff_bytes(pc)
    source = {"kind": "git", "commit": pc.commit, "parent": pc.parent, "ref_kind": pc.kind}
    return build_lock({**pr_meta(pc), "file_notes": notes}, diff, source, repo, reg.pr_url(pr))


def fetch_git(config: Config, repo: str, prs: list[int], clone: str, ref: str = "HEAD", progress=None) -> list[FetchResult]:
    config.repo(repo)
    history = History(open_clone(clone), ref)
    results = []
    for pr in prs:
        try:
            lock = lock_from_git(config, repo, history, pr)
            results.append(_store(config, repo, pr, lock))
        except DossierError as exc:
            results.append(FetchResult(pr, error=str(exc)))
        except git.GitCommandError as exc:  # anything else git refuses: one line, keep going
            detail = (exc.stderr or "").strip().splitlines()
            results.append(FetchResult(pr, error=f"git failed: {detail[-1] if detail else exc}"))
        if progress:
            progress(pr)
    return results


def _store(config: Config, repo: str, pr: int, lock: dict) -> FetchResult:
    path = config.lock_path(repo, pr)
    old = path.read_text(encoding="utf-8") if path.exists() else None
    from .evidence import dump_lock

    changed = old != dump_lock(lock)
    if changed:
        write_lock(path, lock)
    return FetchResult(pr, path, changed=changed)


def lock_from_diff(config: Config, repo: str, pr: int, diff: bytes, title: str, state: str,
                   merged: str | None = None) -> FetchResult:
    reg = config.repo(repo)
    if not diff.strip():
        raise DossierError("the diff is empty; nothing to lock")
    meta = {"pr": pr, "title": title, "state": state, "merged": merged}
    lock = build_lock(meta, diff, {"kind": "diff"}, repo, reg.pr_url(pr))
    if not lock["files"]:
        raise DossierError("no unified diff found in the input (expected `diff --git` or ---/+++ file headers)")
    return _store(config, repo, pr, lock)


def fresh_lock_from_git(ctx, repo: str, pr: int) -> tuple[dict | None, str | None]:
    """Rebuild a lock from the clone named by --source (for G005), cached per repo."""
    cache = ctx.__dict__.setdefault("_histories", {})
    try:
        if repo not in cache:
            cache[repo] = History(open_clone(ctx.sources[repo]))
        return lock_from_git(ctx.config, repo, cache[repo], pr), None
    except DossierError as exc:
        return None, str(exc)

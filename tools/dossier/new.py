"""`dossier new`: scaffold a card from its lock; facts only, never judgement."""

from __future__ import annotations

from pathlib import Path

from .cards import FILE_GROUPS, classify_file
from .config import Config
from .errors import DossierError
from .evidence import load_lock
from .fsio import write_new
from .render import render



_KIND_WORDS = (
    ("revert", ("revert",)),
    ("bugfix", ("fix", "bug", "hang", "crash", "error")),
    ("perf", ("optimi", "faster", "speed", "perf", "reduce", "latency", "throughput", "memory")),
    ("hardware", ("[npu]", "[cpu]", "[amd]", "rocm", "ascend", "aiter", "xpu")),
    ("new-model", ("support qwen", "model:", "add model")),
    ("refactor", ("refactor", "move ", "cleanup", "rename")),
)


def _guess_kind(lock: dict) -> str:
    """A first guess for the writer to confirm; the title words decide, then the files."""
    groups = {classify_file(f["path"]) for f in lock["files"]}
    if groups and groups <= {"Docs"}:
        return "docs"
    if groups and groups <= {"CI", "Tests"}:
        return "ci"
    title = lock.get("title", "").lower()
    for kind, words in _KIND_WORDS:
        if any(w in title for w in words):
            return kind
    return "feature"


def scaffold(lock: dict, config: Config) -> str:
    groups: dict[str, list[str]] = {}
    for f in lock["files"]:
        groups.setdefault(classify_file(f["path"]), []).append(f["path"])
    ordered = [(g, groups[g]) for g in FILE_GROUPS if g in groups]
    candidates = []
    for f in lock["files"]:
        for h in f["hunks"]:
            a = h["header"].split()
            size = sum(int(x.split(",")[1]) if "," in x else 1 for x in a[1:3])
            candidates.append({"path": f["path"], "header": h["header"], "section": h["section"], "size": size})
    candidates.sort(key=lambda c: -c["size"])
    families = config.families_for(lock["repo"], [f["path"] for f in lock["files"]])
    return render("card.md.j2",
        lock=lock, groups=ordered, candidates=candidates[:12], families=families, kind=_guess_kind(lock)
    )


def new_card(config: Config, repo: str, pr: int) -> Path:
    config.repo(repo)
    lock_path = config.lock_path(repo, pr)
    if not lock_path.exists():
        raise DossierError(f"no evidence lock for {repo}#{pr}; run `dossier fetch {repo} {pr} --clone PATH` first")
    path = config.card_path(repo, pr)
    if path.exists():
        raise DossierError(f"{path}: already exists; refusing to overwrite a card")
    lock = load_lock(lock_path)
    if lock.get("repo") != repo or lock.get("pr") != pr:
        raise DossierError(f"{lock_path}: the lock is for {lock.get('repo')}#{lock.get('pr')}, not {repo}#{pr}; "
                           "re-fetch it")
    write_new(path, scaffold(lock, config))
    return path

"""Git history: the one module that reads a clone (find PR commits, diffs, logs)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import git

from ..errors import DossierError

_SQUASH = re.compile(r"\(#(\d+)\)\s*$")
_MERGE = re.compile(r"^Merge pull request #(\d+)\b")
_SEP = "\x1f"
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class PrCommit:
    pr: int
    commit: str
    parent: str | None
    subject: str
    author: str
    date: str  # ISO date of the commit (merge time for squash merges)
    kind: str  # "squash" | "merge" | "pull-ref"


def open_clone(path: str | Path) -> git.Repo:
    p = Path(path).expanduser()
    if not p.exists():
        raise DossierError(f"clone not found: {p}")
    try:
        repo = git.Repo(p)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise DossierError(f"not a git repository: {p}") from None
    if (p / "HEAD").is_file() and (p / "objects").is_dir():
        # A bare git directory without a config file: GitPython guesses a work tree
        # above it, so point git at the directory explicitly.
        repo.git.update_environment(GIT_DIR=str(p.resolve()))
    return repo


def pr_from_subject(subject: str) -> int | None:
    m = _SQUASH.search(subject) or _MERGE.match(subject)
    return int(m.group(1)) if m else None


def _iso_date(value: str) -> str:
    return datetime.fromisoformat(value).astimezone(timezone.utc).date().isoformat()


class History:
    """First-parent history of a clone, indexed by PR number once per run."""

    def __init__(self, repo: git.Repo, ref: str = "HEAD"):
        self.repo = repo
        self.ref = ref
        self._index: dict[int, PrCommit] | None = None
        self._hunk_text: dict[tuple[str, str], str] = {}  # (commit, path) -> changed lines, for former paths
        self._renames: list[tuple[str, str, int | None, str]] | None = None

    def _resolve_ref(self) -> str:
        try:
            return self.repo.git.rev_parse("--verify", "--quiet", self.ref + "^{commit}")
        except git.GitCommandError:
            raise DossierError(f"ref {self.ref!r} not found in {self.repo.git_dir}") from None

    def index(self) -> dict[int, PrCommit]:
        if self._index is None:
            head = self._resolve_ref()
            out = self.repo.git.log(
                "--first-parent", f"--format=%H{_SEP}%P{_SEP}%aI{_SEP}%an{_SEP}%s", head
            )
            idx: dict[int, PrCommit] = {}
            for row in out.splitlines():
                sha, parents, date, author, subject = row.split(_SEP, 4)
                pr = pr_from_subject(subject)
                if pr is None or pr in idx:
                    continue  # newest first: keep the latest landing of a PR number
                plist = parents.split()
                kind = "merge" if _MERGE.match(subject) else "squash"
                idx[pr] = PrCommit(pr, sha, plist[0] if plist else None, subject, author, _iso_date(date), kind)
            self._index = idx
        return self._index

    def find(self, pr: int, known: str | None = None) -> PrCommit:
        """The commit that landed `pr`: on the first-parent line of the ref, else `known` (the
        commit a lock recorded) when the clone has it and its subject names this PR (a clone
        whose HEAD is another branch, e.g. a fork's), else the PR's pull ref."""
        hit = self.index().get(pr) or (self._named_commit(pr, known) if known else None)
        if hit:
            return hit
        ref = f"refs/pull/{pr}/head"
        try:
            head = self.repo.git.rev_parse("--verify", "--quiet", ref)
        except git.GitCommandError:
            head = ""
        if not head:
            also = f", nor the lock's commit {known[:12]}" if isinstance(known, str) and known else ""
            raise DossierError(f"PR #{pr} not found: no merged commit on {self.ref} and no {ref}{also}")
        try:
            base = self.repo.git.merge_base(head, self._resolve_ref())
        except git.GitCommandError:
            base = None
        commit = self.repo.commit(head)
        return PrCommit(pr, head, base, commit.summary, commit.author.name,
                        _iso_date(commit.committed_datetime.isoformat()), "pull-ref")

    def _named_commit(self, pr: int, sha: str) -> PrCommit | None:
        """`sha` as the commit of `pr`, read as the first-parent index reads a commit; None when
        the clone lacks it or its subject names another PR. A lock is input: only a full hex
        SHA reaches git, never a value git could read as an option."""
        if not isinstance(sha, str) or not _FULL_SHA.fullmatch(sha):
            return None
        try:
            row = self.repo.git.log("-1", f"--format=%H{_SEP}%P{_SEP}%aI{_SEP}%an{_SEP}%s", sha + "^{commit}", "--")
        except git.GitCommandError:
            return None
        commit, parents, date, author, subject = row.split(_SEP, 4)
        if pr_from_subject(subject) != pr:
            return None
        plist = parents.split()
        kind = "merge" if _MERGE.match(subject) else "squash"
        return PrCommit(pr, commit, plist[0] if plist else None, subject, author, _iso_date(date), kind)

    _DIFF_ARGS = ("--no-color", "--no-ext-diff", "-M", "--src-prefix=a/", "--dst-prefix=b/")

    def diff_bytes(self, pc: PrCommit) -> tuple[bytes, list[dict]]:
        """The PR's diff, and notes on files whose content the clone lacks.

        Snapshots and partial clones can miss large blobs; then the whole-diff call
        fails, and each file is diffed on its own, a missing one recorded as binary
        with a note instead of losing the PR.
        """
        base = pc.parent or "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # root: the empty tree
        try:
            # Bytes, not str: a diff may carry non-UTF-8 content.
            return self.repo.git.diff(*self._DIFF_ARGS, base, pc.commit, stdout_as_string=False), []
        except git.GitCommandError:
            pass
        try:
            listing = self.repo.git.diff("--name-status", "-M", "-z", base, pc.commit)
        except git.GitCommandError as exc:
            raise DossierError(f"cannot diff {pc.commit[:12]}: {exc.stderr.strip().splitlines()[-1]}") from None
        parts, chunks, notes = listing.split("\0"), [], []
        i = 0
        while i < len(parts) - 1:
            status = parts[i]
            paths = parts[i + 1:i + 3] if status[:1] in "RC" else parts[i + 1:i + 2]
            i += 1 + len(paths)
            try:
                chunks.append(self.repo.git.diff(*self._DIFF_ARGS, base, pc.commit, "--", *paths,
                                                 stdout_as_string=False))
            except git.GitCommandError:
                old, new = paths[0], paths[-1]
                a = "/dev/null" if status == "A" else f"a/{old}"
                b = "/dev/null" if status == "D" else f"b/{new}"
                chunks.append(f"diff --git a/{old} b/{new}\nBinary files {a} and {b} differ\n".encode())
                notes.append({"path": new, "patch": "missing-object"})
        return b"".join(c if c.endswith(b"\n") or not c else c + b"\n" for c in chunks), notes

    def file_at(self, rev: str, path: str) -> bytes | None:
        try:
            return self.repo.git.show(f"{rev}:{path}", stdout_as_string=False)
        except git.GitCommandError:
            return None

    def tree_paths(self, rev: str = "HEAD") -> list[str]:
        return self.repo.git.ls_tree("-r", "--name-only", rev).splitlines()

    def log_paths(self, pathspecs: list[str]) -> list[tuple[str, str, str, list[str]]]:
        """(sha, date, subject, files) for first-parent commits touching the pathspecs."""
        head = self._resolve_ref()
        out = self.repo.git.log(
            "--first-parent", "--name-only", f"--format=\x1e%H{_SEP}%aI{_SEP}%s", head, "--",
            *[f":(glob){p}" for p in pathspecs],
        )
        rows = []
        for block in out.split("\x1e")[1:]:
            head_line, _, rest = block.partition("\n")
            sha, date, subject = head_line.split(_SEP, 2)
            files = [f for f in rest.splitlines() if f]
            rows.append((sha, _iso_date(date), subject, files))
        return rows

    def touches_symbols(self, commit: str, path: str, symbols: tuple[str, ...]) -> bool:
        """Whether the commit's diff of `path` names one of `symbols` in a hunk header or changed line."""
        key = (commit, path)
        cache = self._hunk_text
        if key not in cache:
            try:
                diff = self.repo.git.show("--format=", "--no-color", "-U0", "--first-parent", commit, "--", path)
            except git.GitCommandError:
                diff = ""
            cache[key] = "\n".join(l for l in diff.splitlines()
                                   if l.startswith(("@@", "+", "-")) and not l.startswith(("+++", "---")))
        text = cache[key]
        return any(re.search(re.escape(sym), text, re.IGNORECASE) for sym in symbols)

    def renames(self, path: str) -> list[tuple[str, str, int | None, str]]:
        """(old path, new path, PR, date) of every rename git finds following `path` back in time."""
        head = self._resolve_ref()
        try:
            out = self.repo.git.log("--follow", "-M", "--name-status", f"--format=\x1e%H{_SEP}%aI{_SEP}%s", head,
                                    "--", path)
        except git.GitCommandError:
            return []
        return _renames_of(out)

    def all_renames(self) -> list[tuple[str, str, int | None, str]]:
        """(old path, new path, PR, date) of every first-parent rename: one history walk, for
        families whose globs are patterns, which `git log --follow` cannot trace. No pathspec,
        since git pairs a rename only when both of its paths are inside the pathspec."""
        if self._renames is not None:
            return self._renames
        head = self._resolve_ref()
        try:
            # -l: big moves (#435 moved hundreds of files) exceed git's default rename limit.
            out = self.repo.git.log("--first-parent", "-M", "-l20000", "--diff-filter=R", "--name-status",
                                    f"--format=\x1e%H{_SEP}%aI{_SEP}%s", head)
        except git.GitCommandError:
            return []
        self._renames = _renames_of(out)
        return self._renames


def _renames_of(log: str) -> list[tuple[str, str, int | None, str]]:
    """(old path, new path, PR, date) of the renames in `git log --name-status` output
    formatted as \x1e<sha><SEP><date><SEP><subject>."""
    found = []
    for block in log.split("\x1e")[1:]:
        head_line, _, rest = block.partition("\n")
        _, date, subject = head_line.split(_SEP, 2)
        for line in rest.splitlines():
            parts = line.split("\t")
            if parts and parts[0].startswith("R") and len(parts) == 3:
                found.append((parts[1], parts[2], pr_from_subject(subject), _iso_date(date)))
    return found


def pr_meta(pc: PrCommit) -> dict:
    title = _SQUASH.sub("", pc.subject).strip() if pc.kind == "squash" else pc.subject
    return {
        "pr": pc.pr,
        "title": title,
        "state": "open" if pc.kind == "pull-ref" else "merged",
        "author": pc.author,
        "merged": pc.date if pc.kind != "pull-ref" else None,
    }

"""Grounding rules (G): excerpts and reviewed files must come from the PR's diff."""

from __future__ import annotations

from ..evidence import file_index, line_hash, lock_digest
from .base import Finding, rule

MAX_EXCERPT_LINES = 40
MAX_BLOCK_LINES = 16


def _f(ctx, card, line, code, msg, col=1):
    return Finding(ctx.rel(card.path), line, col, code, msg)


@rule("G001", "excerpt-not-in-diff")
def excerpt_not_in_diff(ctx, card):
    """An excerpt line is not a line of that file's diff.

    Every line inside a `diff` block under `### \\`path\\`` must be a real `+`, `-` or
    context line of that file in the PR's diff; the lock holds a hash of each one.
    Indentation does not count, everything else does.
    """
    lock = ctx.card_lock(card)
    if lock is None:
        return
    files = file_index(lock)
    for ex in card.excerpts:
        f = files.get(ex.path)
        if f is None:
            continue  # G002 reports it
        sets = ctx.__dict__.setdefault("_line_sets", {})
        hashes = sets.get(id(f))
        if hashes is None:
            hashes = sets[id(f)] = set(f["lines"])
        for number, text in ex.lines:
            if not text.strip() or text.startswith("@@"):
                continue
            sign, body = text[:1], text[1:]
            if sign not in "+- ":
                yield _f(ctx, card, number, "G001", "excerpt line must start with '+', '-' or ' '")
            elif line_hash(sign, body) not in hashes and not (sign == " " and (
                    line_hash("+", body) in hashes or line_hash("-", body) in hashes)):
                yield _f(ctx, card, number, "G001", f"line is not in the diff of {ex.path}")


@rule("G002", "excerpt-file")
def excerpt_file(ctx, card):
    """An excerpt's heading names a file or hunk that is not in the PR's diff.

    Head each excerpt with `### \\`path\\` \\`@@ -a,b +c,d @@\\``; the path must be a
    file of the diff and the hunk one of its hunks.
    """
    lock = ctx.card_lock(card)
    if lock is None:
        return
    files = file_index(lock)
    for ex in card.excerpts:
        f = files.get(ex.path)
        if f is None:
            yield _f(ctx, card, ex.line, "G002", f"excerpt file {ex.path} is not in the diff")
        elif ex.hunk and ex.hunk not in {h["header"] for h in f["hunks"]}:
            yield _f(ctx, card, ex.line, "G002", f"hunk {ex.hunk} is not a hunk of {ex.path}")
        elif not ex.lines:
            yield _f(ctx, card, ex.line, "G002", "excerpt heading has no diff block under it")


@rule("G003", "reviewed-file-not-in-diff")
def reviewed_not_in_diff(ctx, card):
    """A file listed under Reviewed files is not in the PR's diff."""
    lock = ctx.card_lock(card)
    if lock is None:
        return
    files = file_index(lock)
    for group, items in card.reviewed.items():
        for number, path in items:
            if path not in files:
                yield _f(ctx, card, number, "G003", f"reviewed file {path} is not in the diff")


@rule("G004", "lock-hash")
def lock_hash(ctx, card):
    """The evidence lock's own hash does not match its content (hand-edited or corrupt)."""
    lock = ctx.card_lock(card)
    if lock is None:
        return
    if lock.get("lock_sha256") != lock_digest(lock):
        path = ctx.config.lock_path(card.path.parent.name, int(card.path.stem))
        yield Finding(ctx.rel(path), 1, 1, "G004", "lock_sha256 does not match the lock's content; re-run dossier fetch")


@rule("G005", "lock-drift")
def lock_drift(ctx, card):
    """With `--source NAME=CLONE`: the lock no longer matches the diff in the clone."""
    repo = card.path.parent.name
    if repo not in ctx.sources:
        return
    lock = ctx.card_lock(card)
    if lock is None or lock.get("source", {}).get("kind") not in ("git", "github", "diff"):
        return
    from ..fetch import fresh_lock_from_git

    fresh, error = fresh_lock_from_git(ctx, repo, lock["pr"])
    path = ctx.rel(ctx.config.lock_path(repo, lock["pr"]))
    if error:
        yield Finding(path, 1, 1, "G005", f"cannot re-verify against {ctx.sources[repo]}: {error}")
    elif fresh["diff_sha256"] != lock["diff_sha256"]:
        yield Finding(path, 1, 1, "G005", "diff in the clone differs from the lock (diff_sha256); re-fetch and re-read the card")


@rule("G006", "excerpt-too-long")
def excerpt_too_long(ctx, card):
    """Excerpts are a quotation, not a copy: at most 16 lines a block, 40 in all."""
    total = 0
    for ex in card.excerpts:
        n = len([l for _, l in ex.lines if l.strip() and not l.startswith("@@")])
        total += n
        if n > MAX_BLOCK_LINES:
            yield _f(ctx, card, ex.line, "G006", f"excerpt has {n} lines (max {MAX_BLOCK_LINES})")
    if total > MAX_EXCERPT_LINES:
        sec = card.sections.get("Key code excerpts")
        yield _f(ctx, card, sec.line if sec else 1, "G006", f"excerpts total {total} lines (max {MAX_EXCERPT_LINES})")


@rule("G007", "no-excerpt")
def no_excerpt(ctx, card):
    """The PR has text diff lines but the card quotes none of them."""
    lock = ctx.card_lock(card)
    if lock is None or card.meta is None or "Key code excerpts" not in card.sections:
        return
    if lock["stats"].get("diff_lines", 0) and not card.excerpts:
        sec = card.sections["Key code excerpts"]
        yield _f(ctx, card, sec.line, "G007", "no excerpt: quote the few diff lines that matter under ### `path` headings")


@rule("G008", "reviewed-none")
def reviewed_none(ctx, card):
    """Reviewed files lists none of the PR's runtime files although the diff has some."""
    from ..cards import classify_file

    lock = ctx.card_lock(card)
    if lock is None or card.meta is None or "Reviewed files" not in card.sections:
        return
    runtime = {f["path"] for f in lock["files"] if classify_file(f["path"]) == "Runtime"}
    listed = {p for items in card.reviewed.values() for _, p in items}
    if runtime and not runtime & listed:
        yield _f(ctx, card, card.sections["Reviewed files"].line, "G008",
                 "no runtime file of the diff is listed as reviewed")

"""Grounding rules (G): excerpts and reviewed files must come from the PR's diff."""

from __future__ import annotations

import re

from ..evidence import HUNK_SCHEMA, hunk_lines
from ..quotes import match_block
from .base import Finding, rule

MAX_EXCERPT_LINES = 40
MAX_BLOCK_LINES = 16


def _f(ctx, card, line, code, msg, col=1):
    return Finding(ctx.rel(card.path), line, col, code, msg)


@rule("G001", "excerpt-not-quotation")
def excerpt_not_quotation(ctx, card):
    """An excerpt is not an exact quotation of that file's diff.

    A ```diff block under `### \\`path\\`` holds one or more runs separated by a
    `...` line (an elision); a hunk header inside the block also starts a run, confined
    to that hunk, and a hunk named in the heading confines the first run. Each run must
    be a contiguous, in-order run of one hunk of the file, with the exact sign (`+`, `-`,
    or a space for context) and the exact indentation; runs follow the diff's order.
    The whole block may be dedented uniformly; nothing else may change. Swapped lines,
    a dropped middle line, a context line shown as `+`, a re-indented line, and lines
    of two hunks with no `...` between them all fire. The lock holds the ordered
    per-hunk hashes this is checked against (schema 2 on).
    """
    lock = ctx.card_lock(card)
    if lock is None:
        return
    if lock.get("schema", 1) < HUNK_SCHEMA:
        path = ctx.rel(ctx.config.lock_path(card.path.parent.name, int(card.path.stem)))
        yield Finding(path, 1, 1, "G001", f"lock has schema {lock.get('schema', 1)}, excerpts need schema "
                                          f"{HUNK_SCHEMA} (ordered per-hunk hashes): re-run dossier fetch")
        return
    files = ctx.lock_files(lock)
    for ex in card.excerpts:
        f = files.get(ex.path)
        if f is None:
            continue  # G002 reports it
        for problem in match_block(ex.lines, ex.hunk, f):
            yield _f(ctx, card, problem.number, "G001", f"{ex.path}: {problem.message}")


@rule("G002", "excerpt-file")
def excerpt_file(ctx, card):
    """An excerpt's heading names a file or hunk that is not in the PR's diff.

    Head each excerpt with `### \\`path\\` \\`@@ -a,b +c,d @@\\``; the path must be a
    file of the diff and the hunk one of its hunks.
    """
    lock = ctx.card_lock(card)
    if lock is None:
        return
    files = ctx.lock_files(lock)
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
    files = ctx.lock_files(lock)
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
    if lock.get("lock_sha256") != ctx.lock_sha(lock):
        path = ctx.config.lock_path(card.path.parent.name, int(card.path.stem))
        yield Finding(ctx.rel(path), 1, 1, "G004", "lock_sha256 does not match the lock's content; re-run dossier fetch")


@rule("G005", "lock-drift")
def lock_drift(ctx, card):
    """With `--source NAME=CLONE`: the lock no longer matches the diff in the clone.

    The lock is rebuilt from the clone and compared whole: `diff_sha256`, and each file's
    hunks and per-line hashes (what G001 checks excerpts against), so a lock whose line
    hashes were edited to fit a changed excerpt, with a recomputed `lock_sha256`, fails here.
    """
    repo = card.path.parent.name
    if repo not in ctx.sources:
        return
    lock = ctx.card_lock(card)
    if lock is None or lock.get("source", {}).get("kind") not in ("git", "github", "diff"):
        return
    fresh, error = ctx.fresh_lock(repo, lock["pr"], lock["source"].get("commit"))
    path = ctx.rel(ctx.config.lock_path(repo, lock["pr"]))
    if error:
        yield Finding(path, 1, 1, "G005", f"cannot re-verify against {ctx.sources[repo]}: {error}")
    elif fresh["diff_sha256"] != lock["diff_sha256"]:
        yield Finding(path, 1, 1, "G005", "diff in the clone differs from the lock (diff_sha256); re-fetch and re-read the card")
    else:
        for problem in _hunk_drift(lock, fresh):
            yield Finding(path, 1, 1, "G005", f"{problem}; the clone's diff says otherwise: re-fetch the lock")


def _hunk_drift(lock: dict, fresh: dict) -> list[str]:
    """Where the stored lock's files, hunks and line hashes differ from those rebuilt from the clone."""
    mine = {f.get("path"): f for f in lock.get("files", []) if isinstance(f, dict)}
    theirs = {f["path"]: f for f in fresh.get("files", [])}
    out = [f"{p}: in the lock, not in the diff" for p in sorted(set(mine) - set(theirs))]
    out += [f"{p}: in the diff, not in the lock" for p in sorted(set(theirs) - set(mine))]
    for p in sorted(set(mine) & set(theirs)):
        a, b = mine[p].get("hunks") or [], theirs[p].get("hunks") or []
        if len(a) != len(b):
            out.append(f"{p}: {len(a)} hunks in the lock, {len(b)} in the diff")
            continue
        for i, (ha, hb) in enumerate(zip(a, b), start=1):
            if not isinstance(ha, dict) or ha.get("header") != hb["header"]:
                out.append(f"{p}: hunk {i} header differs")
            elif (mine_lines := hunk_lines(ha)) != (fresh_lines := hunk_lines(hb)):
                bad = next((j for j, (x, y) in enumerate(zip(mine_lines, fresh_lines), start=1) if x != y),
                           min(len(mine_lines), len(fresh_lines)) + 1)
                out.append(f"{p}: hunk {i} ({hb['header']}) line hash {bad} differs")
    return out


@rule("G006", "excerpt-too-long")
def excerpt_too_long(ctx, card):
    """Excerpts are a quotation, not a copy: at most 16 lines a block, 40 in all."""
    total = 0
    for ex in card.excerpts:
        n = len([l for _, l in ex.lines if l.strip() and not l.startswith("@@") and l.strip() != "..."])
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
    # "Some runtime file, none of them listed", asked in the cheap order: a listed file of
    # the diff that is runtime answers no; else the first runtime file of the diff answers yes.
    paths = [f["path"] for f in lock["files"]]
    listed = {p for items in card.reviewed.values() for _, p in items}
    if any(classify_file(p) == "Runtime" for p in listed.intersection(paths)):
        return
    if any(classify_file(p) == "Runtime" for p in paths):
        yield _f(ctx, card, card.sections["Reviewed files"].line, "G008",
                 "no runtime file of the diff is listed as reviewed")


_TEST_PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*test_[\w-]*\.py|(?:[\w.-]+/)*[\w-]+_test\.py)(::)?")


@rule("G009", "test-claim-unnamed")
def test_claim_unnamed(ctx, card):
    """Validation names a test file but no test function in it.

    When a card says a test covers the change it names the test the way pytest does,
    `` `test/registered/vlm/test_x.py::TestY::test_z` ``, so G010 can check that the
    test exists at the PR's merge commit. A command that runs the whole file is fine
    as long as the section also names the function that covers the change.
    """
    sec = card.sections.get("Validation")
    if sec is None or card.meta is None:
        return
    named = {path for _, _, path, _ in card.test_refs("Validation")}
    reported = set()
    for number, text in sec.body:
        if ".py" not in text:  # every _TEST_PATH match has it; skip the regex on the other lines
            continue
        for m in _TEST_PATH.finditer(text):
            path = m.group(1)
            if m.group(2) or path in reported or any(n.endswith(path) or path.endswith(n) for n in named):
                continue
            reported.add(path)
            yield _f(ctx, card, number, "G009", f"test file {path} is named without a test function: "
                                                f"write `{path}::test_name` for the test that covers the change",
                     col=m.start(1) + 1)


@rule("G010", "test-not-found")
def test_not_found(ctx, card):
    """A `file.py::test` reference names a test that the file does not define at the merge commit.

    `dossier fetch` records the names (never the code) each cited test file defines at
    the PR's merge commit in the lock's `test_symbols`; with `--source NAME=CLONE` the
    file is read from the clone instead. `file.py::TestY::test_z` needs that method of
    that class; `file.py::test_z` a top-level function or a method of any class.
    """
    refs = card.test_refs()
    if not refs:
        return
    lock = ctx.card_lock(card)
    if lock is None:
        return
    recorded = lock.get("test_symbols") or {}
    for number, col, path, name in refs:
        names = recorded.get(path)
        if names is None:
            names = ctx.names_in_clone(card.path.parent.name, lock, path)
        if names is None:
            yield _f(ctx, card, number, "G010", f"the lock records no names for {path}: re-run `dossier fetch` "
                                                "(it reads the test files a card cites) or check with --source", col)
        elif not names:
            yield _f(ctx, card, number, "G010", f"{path} does not exist at the PR's merge commit", col)
        elif name not in names and not ("::" not in name and any(n.endswith("::" + name) for n in names)):
            yield _f(ctx, card, number, "G010", f"{path} defines no {name.replace('::', '.')} at the PR's merge commit", col)

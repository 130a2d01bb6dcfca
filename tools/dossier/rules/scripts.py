"""Script links (L031, L032): a script a Measure or Validation command runs must exist.

A path such as `benchmarks/eval/benchmark_omni_streaming_ttft.py`, or the module form
`python -m benchmarks.eval.benchmark_asr_seedtts`, is looked up in the tree listing of
the pinned SHA (`references/trees/<repo>.txt`) and, for this project's own scripts
(`playbook/...`, `scripts/...`), in the working tree.
"""

from __future__ import annotations

import re

from ..cards import SENTENCE_END
from .base import Caseless, Finding, rule

_FOLDERS = ("benchmarks", "examples", "tests", "test", "scripts", "playbook", "python/sglang", "sglang_omni")
_PATH = re.compile(r"(?<![\w/.-])((?:" + "|".join(_FOLDERS) + r")/[\w./-]+\.py)")
# _PATH's matches, found without trying the folder names at every letter: a match starts a
# run of [\w/.-] characters (the look-behind) with a folder name and a "/", and every
# character of it is in that class, so it is the run up to its last ".py". script_paths
# looks for each "/" (a plain character search) and, where a folder name ending there
# starts a run, matches _PATH_AHEAD (_PATH without its look-behind) from that start.
# No folder name ends another, so a "/" has at most one start.
_PATH_AHEAD = re.compile(_PATH.pattern.removeprefix(r"(?<![\w/.-])"))
_PATH_CHAR = re.compile(r"[\w/.-]")
_MODULE = re.compile(r"python3? -m ((?:benchmarks|sglang_omni|sglang)(?:\.\w+)+)")
# A card may name a script its PR used that later left upstream, when it says so.
_SAYS_GONE = Caseless(r"\b(gone|removed|deleted|no longer|retired|renamed)\b")


def script_paths(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(offset, candidate paths) of every script the text runs or names: a path names
    itself; `python -m pkg.mod` is `pkg/mod.py` or a package's `__main__.py`."""
    out = []
    find, endswith = text.find, text.endswith
    slash = find("/")
    while slash != -1:
        if endswith(_FOLDERS, 0, slash):
            start = slash - len(next(f for f in _FOLDERS if endswith(f, 0, slash)))
            if not (start and _PATH_CHAR.match(text, start - 1)) and (m := _PATH_AHEAD.match(text, start)):
                out.append((start, (m.group(1),)))
                slash = m.end() - 1  # the rest of the match is in its run: no match starts there
        slash = find("/", slash + 1)
    for m in _MODULE.finditer(text):
        module = m.group(1)
        base = ("python/" if module.startswith("sglang.") else "") + module.replace(".", "/")
        out.append((m.start(1), (base + ".py", base + "/__main__.py")))
    return out


def _pinned(ctx) -> dict[str, set[str]]:
    return ctx.pinned_paths


def _exists(ctx, paths: tuple[str, ...], repos) -> bool:
    pinned = _pinned(ctx)
    for path in paths:
        if path.startswith(("playbook/", "scripts/")) and (ctx.root / path).is_file():
            return True
        if any(path in pinned.get(repo, ()) for repo in repos):
            return True
    return False


@rule("L031", "measure-script-missing", scope="project")
def measure_script_missing(ctx):
    """A playbook entry's `measure` runs a script that is not in the tree at the pinned SHA.

    The Measure step is what a user runs today, so its script must exist at the pin
    (`references/trees/<repo>.txt`, refreshed by `dossier tree REPO --clone PATH`), or be
    one of this project's own scripts. Name the script that replaced a removed one.
    """
    from ..yamlio import line_of

    if not _pinned(ctx):
        return
    repos = tuple(ctx.config.repos)
    for entry in ctx.playbook.entries:
        measure = entry.get("measure")
        if not isinstance(measure, str):
            continue
        for _, paths in script_paths(measure):
            if not _exists(ctx, paths, repos):
                yield Finding(entry["_file"], line_of(entry, "measure"), 1, "L031",
                              f"entry '{entry.get('id')}' measures with {paths[0]}, which is not in the tree "
                              f"at the pinned SHA")


@rule("L032", "validation-script-missing")
def validation_script_missing(ctx, card):
    """A card's Validation runs a script that is neither in its diff nor at the pinned SHA.

    A script the PR's own diff touched, or a test file its lock records, is fine. Any
    other script must exist at the pin; if it existed only at the PR's time, the sentence
    that names it says so ("removed by #N", "gone at the pin").
    """
    section = card.sections.get("Validation")
    if section is None or not _pinned(ctx):
        return
    repo = card.path.parent.name
    lock = ctx.card_lock(card) or {}
    in_lock = {f.get("path") for f in lock.get("files", [])} | set(lock.get("test_symbols") or {})
    # The section as one text, so a sentence that wraps across lines is read whole.
    text = card.body_text("Validation") + "\n" if section.body else ""
    for offset, paths in script_paths(text):
        if in_lock.intersection(paths) or _exists(ctx, paths, (repo,)):
            continue
        path = paths[0]
        if _SAYS_GONE.found(_sentence_at(text, offset)):
            continue
        number = section.body[text.count("\n", 0, offset)][0]  # the line holding the offset
        line_start = text.rfind("\n", 0, offset) + 1
        yield Finding(ctx.rel(card.path), number, offset - line_start + 1, "L032",
                      f"{path} is not in the diff and not at the pinned SHA; name what replaced it, "
                      f"or say in this sentence that it is gone")


def _sentence_at(text: str, offset: int) -> str:
    """The sentence (or paragraph piece) of `text` that holds `offset`."""
    start = 0
    for m in SENTENCE_END.finditer(text):
        if m.start() >= offset:
            return text[start:m.start()]
        start = m.end()
    return text[start:]

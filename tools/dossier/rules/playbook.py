"""Playbook link rules (L003-L008): every card, lane, file and symbol an entry names must exist."""

from __future__ import annotations

import re

from .base import Finding, rule

_CARD_ID = re.compile(r"^([a-z0-9][a-z0-9._-]*)/(\d+)$")


def _entries(ctx):
    from ..yamlio import line_of

    for entry in ctx.playbook.entries:
        yield entry, entry["_file"], line_of


def _lock_symbols(ctx) -> dict[tuple[str, str], list]:
    """(repo, file) -> the `symbols` lists every lock records for that file.

    Only the few files the pinned listing lacks need their names expanded (L006), so the
    lists are gathered unexpanded; each is still checked to be iterable, so a malformed
    lock fails here as expanding every lock's names would.
    """
    out: dict[tuple[str, str], list] = {}
    for (repo, _), lock in ctx.all_locks.items():
        for f in lock.get("files", []):
            key = (repo, f["path"])
            symbols = f.get("symbols") or ()
            iter(symbols)
            out.setdefault(key, []).append(symbols)
    return out


def _list(entry, key):
    value = entry.get(key)
    return value if isinstance(value, list) else []


@rule("L003", "playbook-unknown-card", scope="project")
def playbook_unknown_card(ctx):
    """A playbook entry names a card that does not exist.

    Card ids are `<repo>/<pr>` and must match `references/cards/<repo>/<pr>.md`.
    Write the card (`dossier fetch` then `dossier new`) or drop the id.
    """
    for entry, path, line_of in _entries(ctx):
        for i, card in enumerate(_list(entry, "cards")):
            card = str(card)
            if not _CARD_ID.match(card):
                yield Finding(path, line_of(entry, "cards", i), 1, "L003", f"card id '{card}' is not <repo>/<pr>")
            elif card not in ctx.card_ids:
                yield Finding(path, line_of(entry, "cards", i), 1, "L003",
                              f"entry '{entry.get('id')}' names card '{card}', which does not exist")


@rule("L004", "playbook-unknown-lane", scope="project")
def playbook_unknown_lane(ctx):
    """A playbook entry names a lane that `playbook/lanes.yaml` does not register."""
    for entry, path, line_of in _entries(ctx):
        for i, lane in enumerate(_list(entry, "lanes")):
            if lane not in ctx.lanes:
                yield Finding(path, line_of(entry, "lanes", i), 1, "L004",
                              f"entry '{entry.get('id')}' names unknown lane '{lane}'")


@rule("L005", "playbook-unknown-file", scope="project")
def playbook_unknown_file(ctx):
    """A playbook entry names a file that no evidence lock and no tree listing knows.

    Files are checked against every lock's file list and `references/trees/<repo>.txt`
    (written by `dossier tree REPO --clone PATH`). A renamed upstream file shows up here.
    """
    known = ctx.known_files
    for entry, path, line_of in _entries(ctx):
        for i, look in enumerate(_list(entry, "look")):
            if not isinstance(look, dict) or not look.get("repo") or not look.get("file"):
                continue  # L007 reports the shape
            repo, file = str(look["repo"]), str(look["file"])
            line = line_of(look, "file")
            if repo not in ctx.config.repos:
                yield Finding(path, line_of(look, "repo"), 1, "L005", f"unknown repo '{repo}' (see dossier.toml)")
            elif file not in known.get(repo, ()):
                yield Finding(path, line, 1, "L005", f"{repo}:{file} is in no lock and no tree listing")


@rule("L006", "playbook-unknown-symbol", scope="project")
def playbook_unknown_symbol(ctx):
    """A playbook entry names a symbol that the file does not define at the pinned SHA.

    Symbols are def/class names, bare (`forward`) or qualified (`Class.forward`), checked
    against `references/trees/<repo>.symbols.json`, the listing at the pin. Only a file the
    listing does not cover falls back to the symbols the locks record (names from the past,
    which a later PR may have deleted). Re-run `dossier tree` after adding a file the
    listing does not cover.
    """
    from ..trees import expand_names

    pinned = ctx.pinned_symbols
    from_locks = _lock_symbols(ctx)
    for entry, path, line_of in _entries(ctx):
        for look in _list(entry, "look"):
            if not isinstance(look, dict) or not look.get("file") or not isinstance(look.get("symbols"), list):
                continue
            repo, file = str(look.get("repo")), str(look["file"])
            names = pinned.get(repo, {}).get(file)
            if names is None and (repo, file) in from_locks:
                names = set().union(*map(expand_names, from_locks[repo, file]))
            for j, sym in enumerate(look["symbols"]):
                line = line_of(look, "symbols", j)
                if names is None:
                    yield Finding(path, line, 1, "L006",
                                  f"no symbol listing for {repo}:{file}; run `dossier tree {repo} --clone PATH`")
                    break
                if str(sym) not in names:
                    yield Finding(path, line, 1, "L006", f"{repo}:{file} has no def/class '{sym}'")


@rule("L007", "playbook-invalid", scope="project")
def playbook_invalid(ctx):
    """A playbook file is invalid YAML or an entry is malformed (missing field, duplicate id, unknown sub-lane).

    Required: `id` (kebab-case, unique across files), `symptom`, `sublane` (one of
    `dossier.playbook.SUBLANES`), `measure`; `look`, `cards`, `knobs`, `lanes`,
    `aliases`, `prs` are lists; each `look` item has `repo` and `file`.
    """
    for problem in ctx.playbook.problems:
        yield Finding(problem.path, problem.line, 1, "L007", problem.message)


@rule("L008", "playbook-no-lane-or-look", scope="project")
def playbook_no_lane_or_look(ctx):
    """A playbook entry has no lane to validate with, or no file to look at."""
    for entry, path, line_of in _entries(ctx):
        for key, what in (("look", "file to open"), ("lanes", "validation lane")):
            if not _list(entry, key):
                yield Finding(path, line_of(entry), 1, "L008",
                              f"entry '{entry.get('id')}' has no {what} (`{key}` is empty or missing)")


@rule("L015", "playbook-cites-gone-card", scope="project")
def playbook_cites_gone_card(ctx):
    """A playbook entry cites a card whose lines are gone without citing where the behaviour lives now.

    `references/supersession.json` says, per card, whether the lines its PR added still
    stand at the pinned SHA and which later PRs removed or rewrote them. An entry that
    sends a reader to a card whose code is gone must also cite a card of a PR that
    superseded it, so nobody is sent to code that no longer exists.
    """
    from .. import supersede as sup

    for entry, path, line_of in _entries(ctx):
        cited = [str(c) for c in _list(entry, "cards")]
        for cid in cited:
            info = sup.for_card(ctx.root, cid, ctx.supersession)
            if not info or info["state"] != "gone":
                continue
            repo = cid.split("/")[0]
            later = [f"{repo}/{e['pr']}" for e in sup.significant(info) if e.get("pr")]
            if not any(c in cited for c in later):
                have = [c for c in later if c in ctx.card_ids]
                hint = f"cite {', '.join(have)}" if have else \
                    f"card one of {', '.join('#' + c.split('/')[1] for c in later) or 'its superseding commits'} and cite it"
                yield Finding(path, line_of(entry, "cards"), 1, "L015",
                              f"{entry.get('id')}: {cid} is gone at the pinned SHA; {hint}")


@rule("L016", "playbook-not-in-release", scope="project")
def playbook_not_in_release(ctx):
    """A playbook entry names an sglang or sglang-omni flag, env var or file that the newest release lacks, without saying so.

    The base is current to a pinned upstream SHA, but users run the released wheel.
    `references/trees/<repo>-release.json` (`dossier tree REPO --wheel WHEEL`)
    lists each release's paths, CLI flags and env vars. A knob or file the release does
    not have must say so where it is named (the knob text or the file's `why` names the
    release version, e.g. "removed in 0.5.23: use --mm-feature-transport").
    """
    pinned = ctx.pinned_names
    for repo, release in ctx.releases.items():
        if release:
            yield from _not_in_release(ctx, repo, release, pinned)


def _not_in_release(ctx, repo, release, pinned):
    from ..trees import missing_in_release

    version = release["version"]
    for entry, path, line_of in _entries(ctx):
        for i, knob in enumerate(_list(entry, "knobs")):
            gone = missing_in_release(release, str(knob), pinned)
            if gone and version not in str(knob):
                yield Finding(path, line_of(entry, "knobs", i), 1, "L016",
                              f"{entry.get('id')}: {', '.join(gone)} is not in {repo} {version}; say so in the knob")
        for i, look in enumerate(_list(entry, "look")):
            if not isinstance(look, dict) or look.get("repo") != repo:
                continue
            gone = missing_in_release(release, str(look.get("file", "")))
            if gone and version not in str(look.get("why", "")):
                yield Finding(path, line_of(entry, "look", i), 1, "L016",
                              f"{entry.get('id')}: {look.get('file')} is not in {repo} {version}; say so in its why")

"""Structure rules (S): frontmatter, sections, agreement with the lock."""

from __future__ import annotations

import datetime as _dt

from ..cards import KINDS, REQUIRED_SECTIONS, STATES
from .base import Finding, RULES, rule


def _f(ctx, card, line, code, msg, col=1):
    return Finding(ctx.rel(card.path), line, col, code, msg)


@rule("S001", "frontmatter-invalid")
def frontmatter_invalid(ctx, card):
    """Frontmatter is missing, not YAML, not a mapping, or the file is not UTF-8.

    A card starts with `---`, a YAML mapping, and a closing `---`. Without it no other
    rule can compare the card with its evidence lock.
    """
    if card.meta_error:
        yield _f(ctx, card, 1, "S001", card.meta_error)


@rule("S002", "frontmatter-field")
def frontmatter_field(ctx, card):
    """A required frontmatter field is missing or has the wrong type.

    Required: repo, pr, title, state, url, families (list), kind, lanes (list).
    `merged` is required when state is `merged`; `symptoms`, when present, is a list.
    families, lanes and symptoms hold names (strings), nothing nested.
    """
    for line, message, _ in card.field_problems():
        yield _f(ctx, card, line, "S002", message)


@rule("S003", "section-missing")
def section_missing(ctx, card):
    """A required section is missing or empty.

    Every card has `## Motivation`, `## Key implementation`, `## Key code excerpts`,
    `## Reviewed files` and `## Validation`, each with content.
    """
    if card.meta is None:
        return
    for name in REQUIRED_SECTIONS:
        sec = card.sections.get(name)
        if sec is None:
            yield _f(ctx, card, card.body_start, "S003", f"section '## {name}' is missing")
        elif not any(text.strip() for _, text in sec.body):  # `not sec.text`, without joining the section
            yield _f(ctx, card, sec.line, "S003", f"section '## {name}' is empty")


def _as_date(value):
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()[:10]
    return str(value)[:10] if value else None


_LOCK_FACTS = ("title", "state", "url", "merged", "pr", "repo")  # copied from the lock by `dossier new`


@rule("S004", "lock-disagrees")
def lock_disagrees(ctx, card):
    """Frontmatter disagrees with the evidence lock (title, state, dates, url, stats).

    Facts in the frontmatter are copied from the lock by `dossier new`; when one drifts,
    either the card was edited by hand or the lock was re-fetched. Re-fetch or fix the card.
    """
    meta, lock = card.meta, ctx.card_lock(card)
    if meta is None or lock is None:
        return
    for key in _LOCK_FACTS:
        if key not in meta:
            continue
        mine, theirs = meta[key], lock.get(key)
        if key == "merged":
            mine, theirs = _as_date(mine), _as_date(theirs)
        if mine != theirs:
            yield _f(ctx, card, card.key_line(key), "S004", f"'{key}' is {mine!r} but the lock says {theirs!r}")
    stats = meta.get("stats")
    if isinstance(stats, dict):
        for key, value in stats.items():
            if lock["stats"].get(key) != value:
                yield _f(ctx, card, card.key_line("stats"), "S004",
                         f"stats.{key} is {value!r} but the lock says {lock['stats'].get(key)!r}")


@rule("S005", "unknown-value")
def unknown_value(ctx, card):
    """Frontmatter names an unknown family, kind or state.

    Families come from `dossier.toml`; kinds and states are fixed vocabularies
    (see `dossier rule S005`).
    """
    meta = card.meta
    if meta is None:
        return
    for fam in meta.get("families") or []:
        if fam not in ctx.config.families:
            yield _f(ctx, card, card.key_line("families"), "S005", f"unknown family '{fam}'")
    if meta.get("kind") and meta["kind"] not in KINDS:
        yield _f(ctx, card, card.key_line("kind"), "S005", f"unknown kind '{meta['kind']}' (one of {', '.join(KINDS)})")
    if meta.get("state") and meta["state"] not in STATES:
        yield _f(ctx, card, card.key_line("state"), "S005", f"unknown state '{meta['state']}'")


@rule("S006", "card-path")
def card_path(ctx, card):
    """The card's path does not match its repo and PR (`references/cards/<repo>/<pr>.md`)."""
    meta = card.meta
    if meta is None:
        return
    folder, _, stem = card.cid.partition("/")  # path.parent.name, path.stem
    if folder not in ctx.config.repos:
        yield _f(ctx, card, 1, "S006", f"folder '{folder}' is not a registered repo")
    if meta.get("repo") and meta["repo"] != folder:
        yield _f(ctx, card, card.key_line("repo"), "S006", f"repo '{meta['repo']}' but the card lives under '{folder}/'")
    if meta.get("pr") is not None and str(meta.get("pr")) != stem:
        yield _f(ctx, card, card.key_line("pr"), "S006", f"pr {meta['pr']} but the file is named {card.path.name}")


@rule("S007", "suppression")
def suppression(ctx, card):
    """A `noqa` suppression has no written reason or names an unknown rule.

    Suppress a rule for one card with `noqa: {P006: "why this card is the exception"}`;
    the reason must be a sentence (at least 15 characters).
    """
    meta = card.meta
    if meta is None or "noqa" not in meta:
        return
    noqa = meta["noqa"]
    line = card.key_line("noqa")
    if not isinstance(noqa, dict):
        yield _f(ctx, card, line, "S007", "noqa must map rule codes to reasons")
        return
    for code, reason in noqa.items():
        if code not in RULES:
            yield _f(ctx, card, line, "S007", f"noqa names unknown rule {code}")
        elif not isinstance(reason, str) or len(reason.strip()) < 15:
            yield _f(ctx, card, line, "S007", f"noqa {code} needs a written reason (15+ characters)")


@rule("S008", "lock-missing")
def lock_missing(ctx, card):
    """The card has no readable evidence lock.

    Every card needs `references/evidence/<repo>/<pr>.json`, written by `dossier fetch`.
    """
    if card.meta is None or not card.path.stem.isdigit():
        return
    lock, error = ctx.lock_for(card.path.parent.name, int(card.path.stem))
    if lock is None:
        yield _f(ctx, card, 1, "S008", error)


@rule("S009", "reviewed-files-shape")
def reviewed_files_shape(ctx, card):
    """A Reviewed files bullet sits outside a role subsection or names no backticked path.

    `## Reviewed files` holds role subsections (`### Runtime`, `### Tests`, `### Docs`,
    `### CI`, `### Other`), each a list of bullets that start with a backticked path:
    `` - `python/sglang/srt/models/qwen3_vl.py`: what was read there ``. A bullet such as
    `` - runtime: `x.py` `` directly under the section, or one with no path, would
    otherwise be skipped by G003 and never checked against the diff.
    """
    if card.meta is None:
        return
    for number, message in card.reviewed_strays:
        yield _f(ctx, card, number, "S009", f"Reviewed files: {message}")

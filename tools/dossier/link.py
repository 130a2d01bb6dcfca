"""`dossier link`: cite each card in the playbook entries its `symptoms:` names.

A card says which symptoms it concerns; the playbook entry lists the cards that
changed that path, newest first. This command writes the second from the first,
touching only the one-line `cards: [...]` lists, so comments and layout stay.
"""

from __future__ import annotations

import re


from .errors import DossierError
from .kb import KnowledgeBase
from .fsio import read_text, write_atomic
from .playbook import playbook_files

_ENTRY = re.compile(r"^\s*- id:\s*(\S+)\s*$")
_CARDS = re.compile(r"^(\s*cards:\s*)\[(.*)\]\s*$")


def card_symptoms(ctx: KnowledgeBase) -> dict[str, list[str]]:
    """Playbook id -> ids of the cards whose frontmatter names it."""
    out: dict[str, list[str]] = {}
    for card in ctx.all_cards:
        for sid in (card.meta or {}).get("symptoms") or []:
            out.setdefault(str(sid), []).append(ctx.card_id(card))
    return out


def _merged(ctx: KnowledgeBase, cid: str) -> tuple[str, int]:
    repo, pr = cid.split("/", 1)
    lock = ctx.lock_for(repo, int(pr))[0] if pr.isdigit() else None
    return ((lock or {}).get("merged") or "", int(pr) if pr.isdigit() else 0)


def missing_links(ctx: KnowledgeBase) -> list[tuple[str, int, str, list[str]]]:
    """(playbook file, line, entry id, cards to add) for every entry that misses a card citing it."""
    wanted = card_symptoms(ctx)
    out = []
    for path in playbook_files(ctx.root):
        entry = None
        try:
            text = read_text(path, ctx.root)
        except DossierError:
            continue  # L007 reports the file; `dossier link` refuses to run until it reads
        for number, line in enumerate(text.split("\n"), start=1):
            m = _ENTRY.match(line)
            if m:
                entry = m.group(1)
                continue
            m = _CARDS.match(line)
            if m and entry in wanted:
                have = {c.strip() for c in m.group(2).split(",") if c.strip()}
                add = sorted(set(wanted[entry]) - have)
                if add:
                    out.append((ctx.rel(path), number, entry, add))
    return out


def link(ctx: KnowledgeBase) -> list[str]:
    """Add the missing citations in place, newest card first; returns one line per change."""
    changes = []
    by_file: dict[str, dict[int, list[str]]] = {}
    for rel, number, entry, add in missing_links(ctx):
        by_file.setdefault(rel, {})[number] = add
        changes.append(f"{rel}:{number}: {entry} += {', '.join(add)}")
    for rel, edits in by_file.items():
        path = ctx.root / rel
        lines = read_text(path).split("\n")
        for number, add in edits.items():
            m = _CARDS.match(lines[number - 1])
            have = [c.strip() for c in m.group(2).split(",") if c.strip()]
            cards = sorted(set(have) | set(add), key=lambda c: _merged(ctx, c), reverse=True)
            lines[number - 1] = f"{m.group(1)}[{', '.join(cards)}]"
        write_atomic(path, "\n".join(lines))
    return changes

"""references/playbook.md: the playbook's entries rendered by sub-lane, with what today's
code and the newest release say of each card they cite ("at the pin: moved ...; in 0.5.23:
partly") and the radar items that name each entry.

Kept apart from `playbook`, which only reads the entries: the tree listings read the
playbook, and this page reads what is computed from those listings (the supersession and
release states).
"""

from __future__ import annotations

from . import release
from . import supersede as sup
from .playbook import SUBLANES, clean, with_defaults
from .radar import _row
from .render import render


def _radar_by_symptom(ctx) -> dict[str, list[dict]]:
    """Radar items by the playbook entry ids they name: what upstream merged for them, what remains."""
    out: dict[str, list[dict]] = {}
    for item in (ctx.radar.items if ctx.radar else []):
        if item.data.get("_not_mapping"):
            continue
        row = _row(ctx.config, item)
        for sid in row["symptoms"]:
            out.setdefault(sid, []).append(row)
    return out


def render_markdown(ctx) -> str:
    """references/playbook.md, grouped by sub-lane in SUBLANES order."""
    entries = [with_defaults(clean(e)) for e in ctx.playbook.entries]
    existing = ctx.card_ids
    groups = []
    for sub, title in SUBLANES.items():
        mine = [e for e in entries if e.get("sublane") == sub]
        if mine:
            groups.append({"id": sub, "title": title, "entries": mine})
    others = [e for e in entries if e.get("sublane") not in SUBLANES]
    if others:
        groups.append({"id": "other", "title": "Other", "entries": others})
    lanes = ctx.lanes
    today = {}
    for cid in existing:
        entry = sup.for_card(ctx.root, cid, ctx.supersession)
        rel = release.for_card(ctx.releases, cid)
        moved = entry and entry["state"] not in ("live", "n/a", "not on history")
        if moved or (rel and rel["state"] in ("partly", "absent")):  # a card standing in both says nothing
            today[cid] = "; ".join(x for x in ["at the pin: " + sup.summary(entry, brief=True) if entry else "",
                                               release.phrase(rel)] if x)
    radar = _radar_by_symptom(ctx)
    return render("playbook.md.j2", as_of=ctx.config.as_of,
        groups=groups, total=len(entries), existing_cards=existing, lanes=lanes, today=today, radar=radar,
        repos={name: r.upstream for name, r in ctx.config.repos.items()},
    )

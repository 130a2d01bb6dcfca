"""`dossier build`: render the generated references from cards, locks and the playbook."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

from .cards import classify_file
from .context import Context
from .fsio import write_atomic

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("dossier", "templates"),
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
    autoescape=False,
)
_ENV.filters["tick"] = lambda s: f"`{s}`"

HISTORY = "references/pr-history.md"


def card_rows(ctx: Context) -> list[dict]:
    rows = []
    for card in ctx.all_cards:
        meta = card.meta or {}
        lock = ctx.card_lock(card)
        if lock is None or not meta:
            continue
        churn = sorted(
            (f for f in lock["files"] if classify_file(f["path"]) == "Runtime"),
            key=lambda f: -(f["additions"] + f["deletions"]),
        ) or lock["files"]
        rows.append({
            "id": ctx.card_id(card),
            "repo": lock["repo"],
            "pr": lock["pr"],
            "title": lock["title"],
            "state": lock["state"],
            "merged": lock.get("merged") or "",
            "kind": meta.get("kind", ""),
            "families": list(meta.get("families") or []),
            "lanes": list(meta.get("lanes") or []),
            "symptoms": list(meta.get("symptoms") or []),
            "files": [f["path"] for f in lock["files"]],
            "main_files": [f["path"].rsplit("/", 1)[-1] for f in churn[:3]],
            "card": f"cards/{lock['repo']}/{lock['pr']}.md",
            "url": lock["url"],
        })
    rows.sort(key=lambda r: (r["merged"], r["pr"]), reverse=True)
    return rows


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def render_history(ctx: Context) -> str:
    rows = card_rows(ctx)
    families = []
    for fam in ctx.config.families.values():
        mine = [r for r in rows if fam.name in r["families"]]
        if not mine:
            continue
        cover: dict[str, list[dict]] = {}
        for r in mine:
            for path in r["files"]:
                if fam.matches(r["repo"], path):
                    cover.setdefault(f"{r['repo']}:{path}" if r["repo"] != "sglang" else path, []).append(r)
        families.append({"name": fam.name, "title": fam.title, "anchor": _anchor(fam.title),
                         "rows": mine, "coverage": sorted(cover.items())})
    per_repo = {}
    for r in rows:
        per_repo[r["repo"]] = per_repo.get(r["repo"], 0) + 1
    return _ENV.get_template("pr-history.md.j2").render(
        cards=rows, families=families, per_repo=sorted(per_repo.items())
    )


def generated_outputs(ctx: Context) -> dict[str, str]:
    """Every generated file, relative path -> content; check compares, build writes."""
    out = {HISTORY: render_history(ctx)}
    from . import playbook

    render = getattr(playbook, "render_markdown", None)
    if render is not None and playbook.playbook_files(ctx.root):
        out["references/playbook.md"] = render(ctx)
    try:
        from . import radar
    except ImportError:
        radar = None
    if radar is not None and hasattr(radar, "render_markdown") and radar.radar_path(ctx.root).exists():
        out["references/radar.md"] = radar.render_markdown(ctx)
    return out


def build(ctx: Context) -> list[Path]:
    written = []
    for rel, text in generated_outputs(ctx).items():
        path = ctx.root / rel
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_atomic(path, text)
            written.append(path)
    return written

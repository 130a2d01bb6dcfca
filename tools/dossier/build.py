"""`dossier build`: render the generated references from cards, locks and the playbook."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Callable

from .cards import classify_file
from .kb import KnowledgeBase
from .fsio import write_atomic
from .readable import require_readable_inputs
from .render import render


HISTORY = "references/pr-history.md"


def card_rows(ctx: KnowledgeBase) -> list[dict]:
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


def render_history(ctx: KnowledgeBase) -> str:
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
    return render("pr-history.md.j2", as_of=ctx.config.as_of,
        cards=rows, families=families, per_repo=sorted(per_repo.items())
    )


def _renderers(ctx: KnowledgeBase) -> dict[str, Callable[[KnowledgeBase], str]]:
    """Every generated file the knowledge base calls for, relative path -> renderer."""
    from . import playbook, playbook_page, radar

    out: dict[str, Callable[[KnowledgeBase], str]] = {HISTORY: render_history}
    if playbook.playbook_files(ctx.root):
        out["references/playbook.md"] = playbook_page.render_markdown
    if radar.radar_path(ctx.root).exists():
        out["references/radar.md"] = radar.render_markdown
    return out


_STAMP = re.compile(r"<!-- dossier-build inputs=([0-9a-f]{16}) output=([0-9a-f]{16}) -->\n\Z")
_INPUT_GLOBS = ("dossier.toml", "references/cards/*/*.md", "references/evidence/*/*.json",
                "references/radar.yaml", "playbook/**/*.yaml", "references/measurements/*/*.json",
                "references/supersession.json")


def inputs_digest(ctx: KnowledgeBase, texts: dict[Path, str] | None = None) -> str:
    """Hash of everything a generated file is rendered from, the renderer's own code included.

    `texts` (path -> text as read, strict UTF-8) are inputs the caller has read already:
    `check` has every card and every lock it loaded, whose bytes are their text encoded
    again (~15 MB of locks not read twice at 700 cards). `build` passes none, since it
    rewrites cards' measurement blocks before this.
    """
    h = hashlib.sha256()
    package = Path(__file__).parent
    # Each file is named by where it sits in its own tree (the knowledge base, or the package as
    # `dossier/...`), never by where the package is installed: an editable checkout, a wheel and
    # a copy elsewhere hash alike, so `dossier build` on a clean clone changes nothing.
    named = _named_below(ctx.root, [p for g in _INPUT_GLOBS for p in ctx.root.glob(g)])
    code = _named_below(package, package.glob("*.py")) + _named_below(package, package.glob("templates/*.j2"))
    named += [("dossier/" + name, p) for name, p in code]
    texts = texts or {}
    buf = bytearray(1 << 18)  # one buffer for every file: ~20 MB of locks are read at 700 cards
    view = memoryview(buf)
    for name, path in named:
        h.update(name.encode())
        h.update(b"\0")
        if path in texts:
            h.update(texts[path].encode("utf-8"))
        else:
            with open(path, "rb", buffering=0) as fh:
                while n := fh.readinto(buf):
                    h.update(view[:n])
        h.update(b"\0")
    return h.hexdigest()[:16]


def _named_below(base: Path, paths) -> list[tuple[str, Path]]:
    """(path relative to base, path) for paths found under base, sorted as the Paths sort.

    Path order is the order of their parts, and names are the parts below base joined:
    the same as sorting the Paths and calling relative_to, without either's cost per path.
    """
    n = len(base.parts)
    found = sorted(((p.parts, p) for p in paths), key=lambda e: e[0])
    return [("/".join(parts[n:]), p) for parts, p in found]


def _strip_stamp(text: str) -> str:
    m = _STAMP.search(text)
    return text[: m.start()] if m else text


def _stamp(body: str, inputs: str) -> str:
    output = hashlib.sha256(body.encode()).hexdigest()[:16]
    return f"{body}<!-- dossier-build inputs={inputs} output={output} -->\n"


def generated_outputs(ctx: KnowledgeBase) -> dict[str, str]:
    """Every generated file, relative path -> content; check compares, build writes."""
    inputs = inputs_digest(ctx)
    return {rel: _stamp(render_file(ctx), inputs) for rel, render_file in _renderers(ctx).items()}


def stale_outputs(ctx: KnowledgeBase) -> list[tuple[str, str | None, str]]:
    """(path, current text or None, expected text) for each generated file that is out of date.

    A file whose stamp matches today's inputs and whose body matches its own output
    hash is fresh without rendering anything: the common case costs a few hashes.
    """
    inputs = inputs_digest(ctx, {card.path: card.text for card in ctx.all_cards} | ctx.lock_texts)
    out = []
    for rel, render_file in _renderers(ctx).items():
        path = ctx.root / rel
        current = path.read_text(encoding="utf-8", errors="replace") if path.exists() else None
        if current is not None:
            m = _STAMP.search(current)
            body = current[: m.start()] if m else current
            if m and m.group(1) == inputs and m.group(2) == hashlib.sha256(body.encode()).hexdigest()[:16]:
                continue
        body = render_file(ctx)
        expected = _stamp(body, inputs)
        if current is None or _strip_stamp(current) != body:
            out.append((rel, current, expected))
    return out


def build(ctx: KnowledgeBase) -> list[Path]:
    from .measurement_blocks import write_card_blocks

    require_readable_inputs(ctx, "build stopped, nothing written")
    written = write_card_blocks(ctx.root)  # cards first: the generated indexes read them
    for rel, text in generated_outputs(ctx).items():
        path = ctx.root / rel
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_atomic(path, text)
            written.append(path)
    return written

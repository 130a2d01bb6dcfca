"""The cross-reference graph: cards, playbook entries, lanes and families, and who cites whom.

Every page links through this graph, so a card lists the entries that cite it, a
lane lists its cards, and a link to a file without a page degrades to text.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import jinja2

from ..build import card_rows, generated_outputs
from ..cards import Card
from ..config import Config
from ..errors import DossierError
from ..fsio import read_text
from ..kb import KnowledgeBase
from .markdown import cell, relative, slug

_CARD_REF = re.compile(r"^(?:([a-z0-9][a-z0-9._-]*)\s*[/#:]\s*)?#?(\d+)$")
_CARD_FILE = re.compile(r"^references/cards/([^/]+)/(\d+)\.md$")
# knowledge-base files shown as one fixed page each
_FIXED_PAGES = {
    "references/playbook.md": "playbook/index.md",
    "references/pr-history.md": "cards/index.md",
    "references/radar.md": "radar.md",
    "playbook/lanes.yaml": "lanes/index.md",
}


def as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def entry_symptom(entry: dict) -> str:
    return str(entry.get("symptom") or entry.get("title") or "").strip()


@dataclass
class CrossRefs:
    """The knowledge base as the site sees it: nodes by site id, and the edges between them."""

    config: Config

    @cached_property
    def kb(self) -> KnowledgeBase:
        return KnowledgeBase(self.config)

    @property
    def root(self) -> Path:
        return self.config.root

    # ---- nodes -----------------------------------------------------------------

    @cached_property
    def rows(self) -> dict[str, dict]:
        return {r["id"]: r for r in card_rows(self.kb)}

    @cached_property
    def cards(self) -> dict[str, Card]:
        return {self.kb.card_id(c): c for c in self.kb.all_cards}

    @cached_property
    def entries(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for entry in self.kb.playbook.entries:
            if "id" in entry:
                out.setdefault(slug(entry["id"]), entry)
        return out

    @cached_property
    def lanes(self) -> dict[str, dict]:
        return {slug(k): v for k, v in self.kb.lanes.items()}

    @cached_property
    def supersession(self) -> dict:
        return self.kb.supersession

    @cached_property
    def releases(self) -> dict[str, dict | None]:
        return self.kb.releases

    def today(self, card_id: str) -> dict | None:
        """How much of a card's code still stands at the pinned SHA, if measured."""
        from .. import supersede

        return supersede.for_card(self.root, card_id, self.supersession)

    # ---- edges -----------------------------------------------------------------

    def card_ref(self, ref) -> str | None:
        """A card id ('repo/pr') for a reference written as repo/pr, repo#pr, #pr or {repo, pr}."""
        if isinstance(ref, dict):
            ref = f"{ref.get('repo', '')}/{ref.get('pr', '')}".lstrip("/")
        m = _CARD_REF.match(str(ref).strip().removesuffix(".md").rsplit("cards/", 1)[-1])
        if not m:
            return None
        repo, pr = m.group(1), m.group(2)
        if repo:
            return f"{repo}/{pr}" if f"{repo}/{pr}" in self.cards else None
        hits = [cid for cid in self.cards if cid.endswith(f"/{pr}")]
        return hits[0] if len(hits) == 1 else None

    def entry_cards(self, entry: dict) -> list[str]:
        return [cid for cid in (self.card_ref(r) for r in as_list(entry.get("cards"))) if cid]

    @cached_property
    def _cited_by_entry(self) -> dict[str, set[str]]:
        """Entry id -> the cards it lists; read once, since every card and lane page asks."""
        return {eid: set(self.entry_cards(e)) for eid, e in self.entries.items()}

    @cached_property
    def _cited_by_lane(self) -> dict[str, set[str]]:
        return {lid: {self.card_ref(r) for r in as_list(lane.get("cards"))} for lid, lane in self.lanes.items()}

    def cites(self, card_id: str) -> tuple[list[str], list[str]]:
        """Playbook entries and lanes that cite a card (by listing it, or named by it)."""
        meta = (self.cards[card_id].meta or {}) if card_id in self.cards else {}
        named = {slug(s) for s in as_list(meta.get("symptoms"))}
        entries = [eid for eid in self.entries if card_id in self._cited_by_entry[eid] or eid in named]
        lanes = {slug(l) for l in as_list(meta.get("lanes")) if slug(l) in self.lanes}
        lanes |= {lid for lid, cards in self._cited_by_lane.items() if card_id in cards}
        return entries, sorted(lanes)

    # ---- files and their pages ---------------------------------------------------

    def site_path(self, repo_path: str) -> str | None:
        """Where a file of the knowledge base lives on the site, if it has a page."""
        p = posixpath.normpath(repo_path)
        m = _CARD_FILE.match(p)
        if m and f"{m.group(1)}/{m.group(2)}" in self.cards:
            return f"cards/{m.group(1)}/{m.group(2)}.md"
        if p in _FIXED_PAGES:
            return _FIXED_PAGES[p] if _FIXED_PAGES[p] in self.planned else None
        for lid, lane in self.lanes.items():
            if p == posixpath.normpath(str(lane.get("script", ""))):
                return f"lanes/{lid}.md"
        return None

    @cached_property
    def planned(self) -> set[str]:
        out = {"playbook/index.md", "cards/index.md", "lanes/index.md"}
        if self.reference("references/radar.md") is not None:
            out.add("radar.md")
        return out

    @cached_property
    def generated(self) -> dict[str, str]:
        """What `dossier build` would write now, so the site never shows a stale copy."""
        try:
            return generated_outputs(self.kb)
        except (DossierError, jinja2.TemplateError):
            return {}  # `dossier check` reports the cause; the site falls back to the files

    def reference(self, rel: str) -> str | None:
        """A generated reference page (playbook.md, radar.md): fresh, else as on disk, else None."""
        if rel in self.generated:
            return self.generated[rel]
        path = self.root / rel
        return read_text(path) if path.is_file() else None

    def links(self, page: str) -> PageLinks:
        return PageLinks(self, page)


@dataclass
class PageLinks:
    """Markdown links from one page to the graph's nodes; a node with no page stays code."""

    refs: CrossRefs
    page: str

    def to(self, dest: str) -> str:
        return relative(self.page, dest)

    def card(self, card_id: str, label: str | None = None) -> str:
        row = self.refs.rows.get(card_id)
        text = label or (f"{card_id.replace('/', '#')}" + (f" {row['title']}" if row else ""))
        return f"[{cell(text)}]({self.to(f'cards/{card_id}.md')})"

    def entry(self, eid: str) -> str:
        return f"[{cell(eid)}]({self.to(f'playbook/{eid}.md')})"

    def lane(self, lid: str) -> str:
        return f"[{cell(lid)}]({self.to(f'lanes/{lid}.md')})" if lid in self.refs.lanes else f"`{lid}`"

    def family(self, name: str) -> str:
        fam = self.refs.config.families.get(name)
        return f"[{cell(fam.title)}]({self.to(f'families/{slug(name)}.md')})" if fam else f"`{name}`"

    def families(self, names) -> str:
        return ", ".join(self.family(str(f)) for f in names)

    def lanes(self, ids) -> str:
        return ", ".join(self.lane(l) for l in ids)

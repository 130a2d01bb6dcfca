"""The site's pages, each rendered from a template in `templates/site/`.

This module gathers what a page shows from the cross-reference graph; the
templates lay it out; `markdown` re-links the text that cards and references bring.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import yaml

from ..config import Config
from ..errors import DossierError
from ..fsio import read_text
from ..measurements import BLOCK_END
from ..render import render
from . import check_pages
from .markdown import (cell, diff_fences, frontmatter, link_excerpt_heads, link_pr_numbers, rewrite_links,
                       slug)
from .xref import CrossRefs, PageLinks, as_list, entry_symptom

_H1 = re.compile(r"^# .*$", re.M)
# facts the card table shows in its own way; any other frontmatter key is listed as is
_SHOWN_FACTS = {"repo", "pr", "title", "state", "merged", "kind", "url", "stats", "families", "lanes", "symptoms"}
_LANE_FIELDS = {"id", "title", "script", "args", "repo", "model", "families", "measures", "check", "cards"}
_ENTRY_HEADINGS = {"look": "Where to look", "prs": "Related PRs", "sublane": "Sub-lane",
                   "knobs": "Knobs", "measure": "What to measure"}


def _page(template: str, page: str, refs: CrossRefs, **context) -> str:
    return render(f"site/{template}", frontmatter=frontmatter, cell=cell, links=refs.links(page), **context)


@dataclass
class Site:
    """Pages of the site, keyed by their docs-relative path.

    `check_help` is `dossier check --help` as text; the command-line package supplies
    it (through the mkdocs hook), so the site never imports the command line.
    """

    config: Config
    check_help: str | None = None
    pages: dict[str, str] = field(default_factory=dict)

    @cached_property
    def refs(self) -> CrossRefs:
        return CrossRefs(self.config)

    @property
    def root(self) -> Path:
        return self.config.root

    def render(self) -> dict[str, str]:
        refs = self.refs
        for cid in refs.cards:
            self.pages[f"cards/{cid}.md"] = self.card_page(cid)
        self.pages["cards/index.md"] = self.cards_index()
        for name in refs.config.families:
            self.pages[f"families/{slug(name)}.md"] = self.family_page(name)
        self.pages["families/index.md"] = self.families_index()
        for eid in refs.entries:
            self.pages[f"playbook/{eid}.md"] = self.entry_page(eid)
        self.pages["playbook/index.md"] = self.playbook_index()
        for lid in refs.lanes:
            self.pages[f"lanes/{lid}.md"] = self.lane_page(lid)
        self.pages["lanes/index.md"] = self.lanes_index()
        radar = refs.reference("references/radar.md")
        if radar is not None:
            self.pages["radar.md"] = frontmatter("Radar") + rewrite_links(
                radar, "references/radar.md", "radar.md", refs.site_path)
        self.pages["measurements.md"] = self.measurements_page()
        self.pages.update({path: svg for path, svg in self.charts.values()})
        self.pages.update(check_pages.pages(self.check_help))
        return self.pages

    # ---- cards -----------------------------------------------------------------

    def card_page(self, cid: str) -> str:
        refs, page = self.refs, f"cards/{cid}.md"
        card = refs.cards[cid]
        meta = card.meta or {}
        lock = refs.kb.card_lock(card)
        repo, pr = cid.split("/")
        title = str(meta.get("title") or (lock or {}).get("title") or "")
        url = meta.get("url") or (lock or {}).get("url") or ""
        body = "\n".join(card.text.split("\n")[card.body_start - 1:]) if card.meta is not None else card.text
        body = rewrite_links(diff_fences(body), f"references/cards/{cid}.md", page, refs.site_path)
        body = link_excerpt_heads(body, url)
        registry = refs.config.repos.get(repo)
        body = link_pr_numbers(body, page, lambda n: f"cards/{repo}/{n}.md" if f"{repo}/{n}" in refs.cards else None,
                               registry.pr_url if registry else None)
        heading = _H1.search(body)
        if heading:
            body = body[:heading.start()] + body[heading.end():]
        chart = self.charts.get(f"{repo}#{pr}")
        if chart and BLOCK_END in body:  # the measured block's chart right under its table
            body = body.replace(BLOCK_END, f"{BLOCK_END}\n\n![Time ratio and peak memory per case]"
                                           f"({'../' * page.count('/')}{chart[0]})\n", 1)
        entries, lanes = refs.cites(cid)
        return _page("card.md.j2", page, refs, title=f"{repo}#{pr} {title}".strip(),
                     h1=heading.group(0) if heading else f"# {title}",
                     facts=self._facts(cid, meta, lock, refs.links(page), lanes),
                     cited_by=[(e, entry_symptom(refs.entries[e])) for e in entries], body=body.strip())

    def _facts(self, cid: str, meta: dict, lock: dict | None, links: PageLinks, lanes: list[str]) -> list[tuple]:
        """(fact, value) rows of a card's table: its frontmatter and lock, linked into the site."""
        rows: list[tuple[str, str]] = []
        url = meta.get("url") or (lock or {}).get("url")
        rows.append(("PR", f"[{cell(cid.replace('/', '#'))}]({url})" if url else cid))
        for key in ("title", "state", "merged", "kind"):
            if meta.get(key) not in (None, ""):
                rows.append((key.capitalize(), cell(meta[key])))
        stats = meta.get("stats") or (lock or {}).get("stats")
        if isinstance(stats, dict):
            rows.append(("Diff", cell(", ".join(f"{k} {v}" for k, v in stats.items()))))
        fams = as_list(meta.get("families"))
        if fams:
            rows.append(("Families", links.families(str(f) for f in fams)))
        if lanes or meta.get("lanes"):
            rows.append(("Lanes", links.lanes(sorted(set(lanes) | {str(l) for l in as_list(meta.get("lanes"))}))))
        symptoms = [str(s) for s in as_list(meta.get("symptoms"))]
        if symptoms:
            rows.append(("Symptoms", ", ".join(
                links.entry(slug(s)) if slug(s) in self.refs.entries else f"`{cell(s)}`" for s in symptoms)))
        if lock:
            rows += self._lock_facts(cid, lock, links)
        for key, value in meta.items():
            if key not in _SHOWN_FACTS:
                rows.append((cell(key), cell(json.dumps(value, default=str) if not isinstance(value, str) else value)))
        return rows

    def _lock_facts(self, cid: str, lock: dict, links: PageLinks) -> list[tuple[str, str]]:
        from .. import supersede

        rows = []
        symbols = sorted({s for f in lock.get("files", []) for s in f.get("symbols", [])})
        if symbols:
            rows.append(("Touched symbols", ", ".join(f"`{cell(s)}`" for s in symbols[:40])))
        entry = self.refs.today(cid)
        if entry:
            repo = cid.split("/")[0]
            status = f"{entry['state']} ({entry.get('present')}/{entry['added']} added lines still stand at " \
                     f"the pinned SHA)"
            if entry.get("moved_to"):
                status += "; now at " + ", ".join(f"`{cell(t)}`" for t in entry["moved_to"][:3])
            by = supersede.significant(entry)
            if by:
                status += "; superseded by " + ", ".join(
                    (links.card(f"{repo}/{e['pr']}", supersede.label(e))
                     if e.get("pr") and f"{repo}/{e['pr']}" in self.refs.cards else supersede.label(e))
                    + f" ({e.get('how', 'removed')} {e['lines']} lines, {e['date']})" for e in by)
            if entry.get("incidental"):
                status += f"; {entry['incidental']['prs']} incidental touches ({entry['incidental']['lines']} lines)"
            rows.append(("Today", cell(status)))
        from .. import release

        rel = release.for_card(self.refs.releases, cid)
        if rel:
            rows.append((f"In {rel['version']}", cell(f"{rel['state']} ({rel['present']}/{rel['added']} added lines of its "
                                                     f"shipped files stand in the release's wheel)")))
        source = lock.get("source") or {}
        if source.get("commit"):
            rows.append(("Evidence", cell(f"{source.get('kind', '')} commit {source['commit'][:12]}, "
                                          f"diff sha256 {str(lock.get('diff_sha256', ''))[:12]}")))
        return rows

    def cards_index(self) -> str:
        refs = self.refs
        return _page("cards_index.md.j2", "cards/index.md", refs, count=len(refs.cards), rows=list(refs.rows.values()),
                     unlisted=sorted(set(refs.cards) - set(refs.rows)))

    # ---- families, playbook, lanes, measurements ---------------------------------

    def family_page(self, name: str) -> str:
        fam = self.refs.config.families[name]
        mine = [r for r in self.refs.rows.values() if name in r["families"]]
        cover: dict[str, list[dict]] = {}
        for r in mine:
            for path in r["files"]:
                if fam.matches(r["repo"], path):
                    cover.setdefault(f"{r['repo']}:{path}", []).append(r)
        return _page("family.md.j2", f"families/{slug(name)}.md", self.refs, family=fam, name=name, rows=mine,
                     coverage=sorted(cover.items()))

    def families_index(self) -> str:
        rows = []
        for name in self.refs.config.families:
            mine = [r for r in self.refs.rows.values() if name in r["families"]]
            rows.append((name, len(mine), mine[0]["merged"] if mine else ""))
        return _page("families_index.md.j2", "families/index.md", self.refs, families=rows)

    def playbook_index(self) -> str:
        page = "playbook/index.md"
        shipped = self.refs.reference("references/playbook.md")
        if shipped is not None:
            shipped = rewrite_links(shipped, "references/playbook.md", page, self.refs.site_path).strip()
        entries = [(eid, entry_symptom(e), [slug(l) for l in as_list(e.get("lanes"))])
                   for eid, e in self.refs.entries.items()]
        return _page("playbook_index.md.j2", page, self.refs, shipped=shipped, entries=entries)

    def entry_page(self, eid: str) -> str:
        entry = self.refs.entries[eid]
        sections = [dict(heading=_ENTRY_HEADINGS.get(key, key.replace("_", " ").capitalize()),
                         **self._entry_field(key, value))
                    for key, value in entry.items()
                    if key not in ("id", "symptom") and not key.startswith("_") and value not in (None, "", [], {})]
        return _page("entry.md.j2", f"playbook/{eid}.md", self.refs, id=str(entry["id"]),
                     symptom=entry_symptom(entry), sections=sections, source=entry.get("_file", "playbook"))

    def _entry_field(self, key: str, value) -> dict:
        """How the entry template shows one field (`kind`) and what it shows; unknown fields as YAML."""
        items = as_list(value)
        if key == "cards":
            return dict(kind="cards", rows=[(r, self.refs.card_ref(r)) for r in items])
        if key == "lanes":
            return dict(kind="lanes", rows=[slug(l) for l in items])
        if key in ("aliases", "knobs") and all(isinstance(i, str) for i in items):
            return dict(kind="names", rows=items)
        if key == "look" and all(isinstance(i, dict) for i in items):
            return dict(kind="look", rows=[dict(repo=s.get("repo", ""), file=s.get("file", ""),
                                                 symbols=as_list(s.get("symbols")), why=s.get("why"))
                                            for s in items])
        if key == "prs" and all(isinstance(i, dict) for i in items):
            return dict(kind="prs", rows=[self._related_pr(pr) for pr in items])
        return dict(kind="yaml", text=_yaml_block(value))

    def _related_pr(self, pr: dict) -> dict:
        """A related PR links its card, else upstream, else stays code."""
        out = dict(card=self.refs.card_ref(pr), url=None, note=pr.get("note"))
        repo = self.refs.config.repos.get(str(pr.get("repo")))
        if out["card"]:
            out["label"] = f"{pr.get('repo')}#{pr.get('pr')}"
        elif repo and str(pr.get("pr", "")).isdigit():
            out.update(label=f"{repo.name}#{pr['pr']}", url=repo.pr_url(int(pr["pr"])))
        else:
            out["label"] = f"{cell(pr.get('repo', ''))}#{cell(pr.get('pr', ''))}"
        return out

    def lane_page(self, lid: str) -> str:
        lane = self.refs.lanes[lid]
        script = str(lane.get("script", ""))
        entries = [eid for eid, e in self.refs.entries.items() if lid in {slug(l) for l in as_list(e.get("lanes"))}]
        extra = {k: v for k, v in lane.items() if k not in _LANE_FIELDS}
        return _page("lane.md.j2", f"lanes/{lid}.md", self.refs, lane_id=str(lane.get("id", lid)),
                     title=lane.get("title", lid), doc=_script_doc(self.root / script, self.root), direct=_lane_command(lane),
                     script=script, script_exists=(self.root / script).is_file(),
                     args=[str(a) for a in as_list(lane.get("args"))], repo=lane.get("repo"),
                     model=lane.get("model"), families=[str(f) for f in as_list(lane.get("families"))],
                     measures=[str(m) for m in as_list(lane.get("measures"))] if lane.get("measures") else [],
                     check=lane.get("check"), extra=_yaml_block(extra) if extra else "",
                     entries=entries, cards=[cid for cid in self.refs.cards if lid in self.refs.cites(cid)[1]])

    def lanes_index(self) -> str:
        lanes = [(lid, lane.get("id", lid), lane.get("title", "")) for lid, lane in self.refs.lanes.items()]
        return _page("lanes_index.md.j2", "lanes/index.md", self.refs, lanes=lanes)

    @cached_property
    def charts(self) -> dict[str, tuple[str, str]]:
        """subject -> (docs path, SVG) of every valid measurement record that has timed cases."""
        from .. import measurements
        from .charts import chart_path, record_svg

        out = {}
        for subject, (_, rec, err) in sorted(self.refs.kb.measurement_records.items()):
            if err or not isinstance(rec, dict) or measurements.problems(rec):
                continue
            svg = record_svg(rec)
            if svg:
                out[subject] = (chart_path(subject), svg)
        return out

    def measurements_page(self) -> str:
        """Every measurement record, sortable by any column (docs/javascripts/tablesort.js)."""
        from .. import measurements

        rows = []
        for subject, (_, rec, err) in sorted(self.refs.kb.measurement_records.items()):
            if err or not isinstance(rec, dict) or measurements.problems(rec):
                continue
            cid = subject.replace("#", "/")
            rows.append(dict(subject=subject, card=cid if cid in self.refs.cards else None, record=rec,
                             headline=measurements.headline(rec), flags=measurements.flags(rec), chart=(self.charts.get(subject) or [None])[0],
                             script_name=rec["script"].rsplit("/", 1)[-1]))
        return _page("measurements.md.j2", "measurements.md", self.refs, records=rows)

    # ---- the home page -------------------------------------------------------------

    def coverage(self) -> str:
        """The home page's figures, counted from the tree."""
        refs = self.refs
        per_repo: dict[str, int] = {}
        for cid in refs.cards:
            per_repo[cid.split("/")[0]] = per_repo.get(cid.split("/")[0], 0) + 1
        figures = [("Cards", len(refs.cards), "cards/index.md"),
                   ("Evidence locks", len(list(refs.config.evidence_dir.glob("*/*.json"))), "cards/index.md"),
                   ("Playbook entries", len(refs.entries), "playbook/index.md"),
                   ("Lanes", len(refs.lanes), "lanes/index.md")]
        radar = refs.kb.radar
        if radar is not None:
            figures.append(("Radar entries", len(radar.items), "radar.md"))
        states: dict[str, dict[str, int]] = {}
        for cid in refs.cards:
            entry = refs.today(cid)
            if entry:
                bucket = states.setdefault(cid.split("/")[0], {})
                bucket[entry["state"]] = bucket.get(entry["state"], 0) + 1
        families = [(name, sum(1 for r in refs.rows.values() if name in r["families"])) for name in refs.config.families]
        return _page("coverage.md.j2", "index.md", refs, as_of=refs.config.as_of, figures=figures,
                     repos=[(name, repo, per_repo.get(name, 0)) for name, repo in refs.config.repos.items()],
                     states=sorted(states.items()), families=families)


def _lane_command(lane: dict) -> str:
    """The script command line `dossier lanes run` would use, with a plain `python`."""
    argv = ["python", str(lane.get("script", "")), *map(str, as_list(lane.get("args")))]
    if lane.get("model"):
        argv += ["--model", str(lane["model"])]
    return shlex.join(argv)


def _public(value):
    """Drop loader bookkeeping (keys starting with '_') from nested data."""
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


def _yaml_block(value) -> str:
    value = _public(value)
    if isinstance(value, (str, int, float)):
        return str(value)
    return "```yaml\n" + yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100).strip() + "\n```"


def _script_doc(path: Path, root: Path) -> str:
    """A lane script's module docstring: what it sends and measures (never through a symlink)."""
    try:
        return ast.get_docstring(ast.parse(read_text(path, root))) or ""
    except (DossierError, SyntaxError, ValueError):
        return ""


def build_site(config: Config, check_help: str | None = None) -> tuple[dict[str, str], str]:
    """(pages by docs path, the home page's coverage block)."""
    site = Site(config, check_help)
    pages = site.render()
    return pages, site.coverage()

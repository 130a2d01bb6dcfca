"""The mkdocs site: every page rendered at build time from cards, locks, playbook, lanes and rules.

`docs_hooks/dossier_site.py` hands these pages to mkdocs as generated files, so
the site reads exactly what the skill and `dossier check` read and nothing is
copied into git.
"""

from __future__ import annotations

import ast
import hashlib
import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import jinja2
import yaml

from .build import card_rows, generated_outputs
from .cards import Card
from .config import Config
from .kb import KnowledgeBase
from .errors import DossierError
from .fsio import read_text

_LINK = re.compile(r"(!?\[[^\]\n]*\])\(([^)\s]+)((?:\s+\"[^\"]*\")?)\)")
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)(.*)$")
_CODE_OR_LINK = re.compile(r"(`[^`\n]*`|!?\[[^\]\n]*\]\([^)\n]*\)|<[^>\n]*>)")
_PR_NUMBER = re.compile(r"(?<![\w/#&])#(\d{1,6})\b")
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_CARD_REF = re.compile(r"^(?:([a-z0-9][a-z0-9._-]*)\s*[/#:]\s*)?#?(\d+)$")


def slug(text: str) -> str:
    return _SLUG.sub("-", str(text)).strip("-") or "entry"


def cell(value) -> str:
    """One Markdown table cell: no pipes or newlines."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def relative(from_page: str, to_page: str) -> str:
    """Link from one site page (docs-relative .md path) to another."""
    return posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")


def frontmatter(title: str) -> str:
    return "---\n" + yaml.safe_dump({"title": title}, allow_unicode=True, width=1000) + "---\n\n"


@dataclass
class Site:
    """Pages of the site, keyed by their docs-relative path."""

    config: Config
    pages: dict[str, str] = field(default_factory=dict)

    @cached_property
    def ctx(self) -> KnowledgeBase:
        return KnowledgeBase(self.config)

    @property
    def root(self) -> Path:
        return self.config.root

    # ---- sources ---------------------------------------------------------------

    @cached_property
    def rows(self) -> dict[str, dict]:
        return {r["id"]: r for r in card_rows(self.ctx)}

    @cached_property
    def cards(self) -> dict[str, Card]:
        return {self.ctx.card_id(c): c for c in self.ctx.all_cards}

    @cached_property
    def entries(self) -> dict[str, dict]:
        from . import playbook

        out: dict[str, dict] = {}
        for entry in playbook.load(self.root).entries:
            if "id" in entry:
                out.setdefault(slug(entry["id"]), entry)
        return out

    @cached_property
    def lanes(self) -> dict[str, dict]:
        return {slug(k): v for k, v in self.ctx.lanes.items()}

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
        return [cid for cid in (self.card_ref(r) for r in _as_list(entry.get("cards"))) if cid]

    def cites(self, card_id: str) -> tuple[list[str], list[str]]:
        """Playbook entries and lanes that cite a card (by listing it, or named by it)."""
        meta = (self.cards[card_id].meta or {}) if card_id in self.cards else {}
        named = {slug(s) for s in _as_list(meta.get("symptoms"))}
        entries = [eid for eid, e in self.entries.items() if card_id in self.entry_cards(e) or eid in named]
        lanes = {slug(l) for l in _as_list(meta.get("lanes")) if slug(l) in self.lanes}
        lanes |= {lid for lid, lane in self.lanes.items()
                  if card_id in {self.card_ref(r) for r in _as_list(lane.get("cards"))}}
        return entries, sorted(lanes)

    # ---- links -------------------------------------------------------------------

    def site_path(self, repo_path: str) -> str | None:
        """Where a file of the knowledge base lives on the site, if it has a page."""
        p = posixpath.normpath(repo_path)
        m = re.match(r"^references/cards/([^/]+)/(\d+)\.md$", p)
        if m and f"{m.group(1)}/{m.group(2)}" in self.cards:
            return f"cards/{m.group(1)}/{m.group(2)}.md"
        fixed = {
            "references/playbook.md": "playbook/index.md",
            "references/pr-history.md": "cards/index.md",
            "references/radar.md": "radar.md",
            "playbook/lanes.yaml": "lanes/index.md",
        }
        if p in fixed:
            return fixed[p] if fixed[p] in self.planned else None
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
            return generated_outputs(self.ctx)
        except (DossierError, jinja2.TemplateError):
            return {}  # `dossier check` reports the cause; the site falls back to the files

    def reference(self, rel: str) -> str | None:
        """A generated reference page (playbook.md, radar.md): fresh, else as on disk, else None."""
        if rel in self.generated:
            return self.generated[rel]
        path = self.root / rel
        return read_text(path) if path.is_file() else None

    def rewrite_links(self, text: str, source: str, page: str) -> str:
        """Re-point relative links of a knowledge-base file (`source`) for its site page.

        A link to a file with no page becomes plain text, so `mkdocs build --strict`
        never fails on content written for the repository layout.
        """

        def fix(m: re.Match) -> str:
            label, target, title = m.groups()
            if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
                return m.group(0)
            path, _, anchor = target.partition("#")
            dest = self.site_path(posixpath.join(posixpath.dirname(source), path))
            if dest is None:
                return label[1:-1] if not label.startswith("!") else ""
            return f"{label}({relative(page, dest)}{'#' + anchor if anchor else ''}{title})"

        return _outside_code(text, lambda chunk: _LINK.sub(fix, chunk))

    def link_pr_numbers(self, text: str, repo: str, page: str) -> str:
        """`#1234` in prose links its card when there is one, else the upstream PR."""
        reg = self.config.repos.get(repo)

        def link(m: re.Match) -> str:
            cid = f"{repo}/{m.group(1)}"
            if cid in self.cards:
                return f"[#{m.group(1)}]({relative(page, f'cards/{cid}.md')})"
            return f"[#{m.group(1)}]({reg.pr_url(int(m.group(1)))})" if reg else m.group(0)

        parts = _CODE_OR_LINK.split(text)  # odd items are code spans and links: leave them
        return "".join(p if i % 2 else _PR_NUMBER.sub(link, p) for i, p in enumerate(parts))

    def link_card(self, card_id: str, page: str, label: str | None = None) -> str:
        row = self.rows.get(card_id)
        text = label or (f"{card_id.replace('/', '#')}" + (f" {row['title']}" if row else ""))
        return f"[{cell(text)}]({relative(page, f'cards/{card_id}.md')})"

    def link_entry(self, eid: str, page: str) -> str:
        return f"[{cell(eid)}]({relative(page, f'playbook/{eid}.md')})"

    def link_lane(self, lid: str, page: str) -> str:
        return f"[{cell(lid)}]({relative(page, f'lanes/{lid}.md')})" if lid in self.lanes else f"`{lid}`"

    def link_family(self, name: str, page: str) -> str:
        fam = self.config.families.get(name)
        return f"[{cell(fam.title)}]({relative(page, f'families/{slug(name)}.md')})" if fam else f"`{name}`"

    # ---- pages -------------------------------------------------------------------

    def render(self) -> dict[str, str]:
        for cid in self.cards:
            self.pages[f"cards/{cid}.md"] = self.card_page(cid)
        self.pages["cards/index.md"] = self.cards_index()
        for name in self.config.families:
            self.pages[f"families/{slug(name)}.md"] = self.family_page(name)
        self.pages["families/index.md"] = self.families_index()
        for eid in self.entries:
            self.pages[f"playbook/{eid}.md"] = self.entry_page(eid)
        self.pages["playbook/index.md"] = self.playbook_index()
        for lid in self.lanes:
            self.pages[f"lanes/{lid}.md"] = self.lane_page(lid)
        self.pages["lanes/index.md"] = self.lanes_index()
        radar = self.reference("references/radar.md")
        if radar is not None:
            self.pages["radar.md"] = frontmatter("Radar") + self.rewrite_links(radar, "references/radar.md", "radar.md")
        self.pages["measurements.md"] = self.measurements_page()
        from . import site_rules

        self.pages.update(site_rules.pages())
        return self.pages

    def card_page(self, cid: str) -> str:
        page = f"cards/{cid}.md"
        card = self.cards[cid]
        meta = card.meta or {}
        lock = self.ctx.card_lock(card)
        repo, pr = cid.split("/")
        title = str(meta.get("title") or (lock or {}).get("title") or "")
        url = meta.get("url") or (lock or {}).get("url") or ""
        body = "\n".join(card.text.split("\n")[card.body_start - 1:]) if card.meta is not None else card.text
        body = self.rewrite_links(_diff_fences(body), f"references/cards/{cid}.md", page)
        body = _link_excerpt_heads(body, url)
        body = _outside_code(body, lambda chunk: self.link_pr_numbers(chunk, repo, page))
        heading = re.search(r"^# .*$", body, re.M)
        h1 = heading.group(0) if heading else f"# {title}"
        if heading:
            body = body[:heading.start()] + body[heading.end():]
        entries, lanes = self.cites(cid)
        out = [frontmatter(f"{repo}#{pr} {title}".strip()), h1, "",
               self.facts_table(cid, meta, lock, page, lanes), ""]
        if entries:
            out += ["!!! tip \"Cited by the playbook\"", ""]
            out += [f"    - {self.link_entry(e, page)}: {cell(_entry_symptom(self.entries[e]))}" for e in entries]
            out.append("")
        out.append(body.strip())
        return "\n".join(out) + "\n"

    @cached_property
    def supersession(self) -> dict:
        from . import supersede as sup

        return sup.load(self.root)

    def facts_table(self, cid: str, meta: dict, lock: dict | None, page: str, lanes: list[str]) -> str:
        rows: list[tuple[str, str]] = []
        url = meta.get("url") or (lock or {}).get("url")
        rows.append(("PR", f"[{cell(cid.replace('/', '#'))}]({url})" if url else cid))
        for key in ("title", "state", "merged", "kind"):
            if meta.get(key) not in (None, ""):
                rows.append((key.capitalize(), cell(meta[key])))
        stats = meta.get("stats") or (lock or {}).get("stats")
        if isinstance(stats, dict):
            rows.append(("Diff", cell(", ".join(f"{k} {v}" for k, v in stats.items()))))
        fams = _as_list(meta.get("families"))
        if fams:
            rows.append(("Families", ", ".join(self.link_family(str(f), page) for f in fams)))
        if lanes or meta.get("lanes"):
            named = sorted(set(lanes) | {str(l) for l in _as_list(meta.get("lanes"))})
            rows.append(("Lanes", ", ".join(self.link_lane(l, page) for l in named)))
        symptoms = [str(s) for s in _as_list(meta.get("symptoms"))]
        if symptoms:
            rows.append(("Symptoms", ", ".join(
                self.link_entry(slug(s), page) if slug(s) in self.entries else f"`{cell(s)}`" for s in symptoms)))
        if lock:
            symbols = sorted({s for f in lock.get("files", []) for s in f.get("symbols", [])})
            if symbols:
                rows.append(("Touched symbols", ", ".join(f"`{cell(s)}`" for s in symbols[:40])))
            from . import supersede as sup

            entry = sup.for_card(self.root, cid, self.supersession)
            if entry:
                by = sup.significant(entry)
                status = f"{entry['state']} ({entry.get('present')}/{entry['added']} added lines still stand at " \
                         f"the pinned SHA)"
                if by:
                    status += "; superseded by " + ", ".join(
                        (self.link_card(f"{cid.split('/')[0]}/{e['pr']}", page, sup.label(e))
                         if e.get("pr") and f"{cid.split('/')[0]}/{e['pr']}" in self.cards else sup.label(e))
                        + f" ({e['lines']} lines, {e['date']})" for e in by)
                rows.append(("Today", cell(status)))
            source = lock.get("source") or {}
            if source.get("commit"):
                rows.append(("Evidence", cell(f"{source.get('kind', '')} commit {source['commit'][:12]}, "
                                              f"diff sha256 {str(lock.get('diff_sha256', ''))[:12]}")))
        known = {"repo", "pr", "title", "state", "merged", "kind", "url", "stats", "families", "lanes", "symptoms"}
        for key, value in meta.items():
            if key not in known:
                rows.append((cell(key), cell(json.dumps(value, default=str) if not isinstance(value, str) else value)))
        return "\n".join(["| Fact | Value |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)])

    def cards_index(self) -> str:
        page = "cards/index.md"
        out = [frontmatter("Cards"), "# Cards", "",
               f"{len(self.cards)} cards, one per pull request, each grounded in its evidence lock.", "",
               "| Merged | PR | Kind | Families | Title |", "|---|---|---|---|---|"]
        listed = set()
        for r in self.rows.values():
            listed.add(r["id"])
            out.append(f"| {r['merged'] or r['state']} | {self.link_card(r['id'], page, r['id'].replace('/', '#'))} "
                       f"| {cell(r['kind'])} | {', '.join(self.link_family(f, page) for f in r['families'])} "
                       f"| {cell(r['title'])} |")
        for cid in sorted(set(self.cards) - listed):  # cards with no lock or broken frontmatter
            out.append(f"| — | {self.link_card(cid, page, cid.replace('/', '#'))} | | | (no evidence lock) |")
        return "\n".join(out) + "\n"

    def family_page(self, name: str) -> str:
        fam = self.config.families[name]
        page = f"families/{slug(name)}.md"
        mine = [r for r in self.rows.values() if name in r["families"]]
        out = [frontmatter(fam.title), f"# {fam.title}", "",
               f"{len(mine)} card{'s' if len(mine) != 1 else ''}; family `{name}` in `dossier.toml`.", "",
               "## Files this family owns", ""]
        for repo, globs in fam.globs.items():
            out += [f"- **{repo}**: " + ", ".join(f"`{g}`" for g in globs)]
        out += ["", "## Timeline", ""]
        if mine:
            out += ["| Merged | PR | State | Kind | Title | Main files |", "|---|---|---|---|---|---|"]
            out += [f"| {r['merged'] or '—'} | {self.link_card(r['id'], page, r['id'].replace('/', '#'))} "
                    f"| {r['state']} | {cell(r['kind'])} | {cell(r['title'])} "
                    f"| {', '.join(f'`{cell(m)}`' for m in r['main_files'])} |" for r in mine]
        else:
            out.append("No cards yet.")
        cover: dict[str, list[dict]] = {}
        for r in mine:
            for path in r["files"]:
                if fam.matches(r["repo"], path):
                    cover.setdefault(f"{r['repo']}:{path}", []).append(r)
        out += ["", "## File coverage", ""]
        if cover:
            out += ["| File | PRs |", "|---|---|"]
            out += [f"| `{cell(p)}` | {', '.join(self.link_card(r['id'], page, '#' + str(r['pr'])) for r in rs)} |"
                    for p, rs in sorted(cover.items())]
        else:
            out.append("No card touches this family's files yet.")
        return "\n".join(out) + "\n"

    def families_index(self) -> str:
        page = "families/index.md"
        out = [frontmatter("Families"), "# Families", "", "| Family | Cards | Newest |", "|---|---:|---|"]
        for name, fam in self.config.families.items():
            mine = [r for r in self.rows.values() if name in r["families"]]
            newest = mine[0]["merged"] if mine else ""
            out.append(f"| {self.link_family(name, page)} | {len(mine)} | {newest} |")
        return "\n".join(out) + "\n"

    def playbook_index(self) -> str:
        page = "playbook/index.md"
        shipped = self.reference("references/playbook.md")
        out = [frontmatter("Playbook")]
        if shipped is not None:
            out.append(self.rewrite_links(shipped, "references/playbook.md", page).strip())
        else:
            out += ["# Playbook", "", "Symptom to files, cards and lanes. Run `dossier find \"<symptom>\"` to search it."]
        if self.entries:
            out += ["", "## Entries", "", "| Entry | Symptom | Lanes |", "|---|---|---|"]
            out += [f"| {self.link_entry(eid, page)} | {cell(_entry_symptom(e))} "
                    f"| {', '.join(self.link_lane(slug(l), page) for l in _as_list(e.get('lanes')))} |"
                    for eid, e in self.entries.items()]
        elif shipped is None:
            out += ["", "No playbook entries yet."]
        return "\n".join(out) + "\n"

    def entry_page(self, eid: str) -> str:
        page = f"playbook/{eid}.md"
        entry = self.entries[eid]
        out = [frontmatter(f"{entry['id']}"), f"# {entry['id']}", ""]
        symptom = _entry_symptom(entry)
        if symptom:
            out += [f"> {symptom}", ""]
        for key, value in entry.items():
            if key in ("id", "symptom") or key.startswith("_") or value in (None, "", [], {}):
                continue
            out += [f"## {_ENTRY_HEADINGS.get(key, key.replace('_', ' ').capitalize())}", ""]
            out += self.entry_field(key, value, page)
            out.append("")
        out.append(f"<small>Source: `{entry.get('_file', 'playbook')}`</small>")
        return "\n".join(out) + "\n"

    def entry_field(self, key: str, value, page: str) -> list[str]:
        """Markdown lines for one field of a playbook entry; unknown fields as YAML."""
        items = _as_list(value)
        if key == "cards":
            return [f"- {self.link_card(cid, page) if cid else f'`{cell(ref)}` (no card)'}"
                    for ref, cid in ((r, self.card_ref(r)) for r in items)]
        if key == "lanes":
            return [f"- {self.link_lane(slug(l), page)}" for l in items]
        if key in ("aliases", "knobs") and all(isinstance(i, str) for i in items):
            return [", ".join(f"`{cell(i)}`" for i in items)]
        if key == "look" and all(isinstance(i, dict) for i in items):
            out = []
            for spot in items:
                symbols = ", ".join(f"`{s}`" for s in _as_list(spot.get("symbols")))
                out.append(f"- **{spot.get('repo', '')}** `{spot.get('file', '')}`" + (f": {symbols}" if symbols else ""))
                if spot.get("why"):
                    out.append(f"    {spot['why']}")
            return out
        if key == "prs" and all(isinstance(i, dict) for i in items):
            out = []
            for pr in items:
                cid = self.card_ref(pr)
                repo = self.config.repos.get(str(pr.get("repo")))
                if cid:
                    link = self.link_card(cid, page, f"{pr.get('repo')}#{pr.get('pr')}")
                elif repo and str(pr.get("pr", "")).isdigit():
                    link = f"[{repo.name}#{pr['pr']}]({repo.pr_url(int(pr['pr']))})"
                else:
                    link = f"`{cell(pr.get('repo', ''))}#{cell(pr.get('pr', ''))}`"
                out.append(f"- {link}" + (f": {pr['note']}" if pr.get("note") else ""))
            return out
        return [_yaml_block(value)]

    def lane_page(self, lid: str) -> str:
        page = f"lanes/{lid}.md"
        lane = self.lanes[lid]
        lane_id = str(lane.get("id", lid))
        script = str(lane.get("script", ""))
        direct = _lane_command(lane)
        out = [frontmatter(lane_id), f"# {lane.get('title', lid)}", "", f"Lane id `{lane_id}`.", ""]
        doc = _script_doc(self.root / script)
        if doc:
            out += [doc, ""]
        out += ["## Run it", "", "Print the server command and the requests it would send (no GPU, no network):", "",
                "```bash", f"dossier lanes run {lane_id} -- --dry-run", "```", "",
                "Launch the server with the lane's flags, send the requests, write the JSON result (needs a GPU):", "",
                "```bash", f"dossier lanes run {lane_id} -- --launch --output {lane_id}.json", "```", "",
                "Or measure a server that is already running:", "",
                "```bash", f"dossier lanes run {lane_id} -- --server-url http://127.0.0.1:30000", "```", "",
                "Without the `dossier` command, the script directly:", "",
                "```bash", f"{direct} --dry-run", "```", ""]
        out += ["## Registry entry", "", "| Field | Value |", "|---|---|",
                f"| Script | `{cell(script)}`{'' if (self.root / script).is_file() else ' (missing)'} |"]
        args = [str(a) for a in _as_list(lane.get("args"))]
        out.append(f"| Arguments | {' '.join(f'`{cell(a)}`' for a in args) if args else 'none'} |")
        for key in ("repo", "model"):
            if lane.get(key):
                out.append(f"| {key.capitalize()} | `{cell(lane[key])}` |")
        fams = _as_list(lane.get("families"))
        if fams:
            out.append(f"| Families | {', '.join(self.link_family(str(f), page) for f in fams)} |")
        if lane.get("measures"):
            out.append(f"| Measures | {cell(', '.join(map(str, _as_list(lane['measures']))))} |")
        if lane.get("check"):
            out.append(f"| Checks | {cell(lane['check'])} |")
        out.append("")
        extra = {k: v for k, v in lane.items()
                 if k not in ("id", "title", "script", "args", "repo", "model", "families", "measures", "check", "cards")}
        if extra:
            out += [_yaml_block(extra), ""]
        cards = [cid for cid in self.cards if lid in self.cites(cid)[1]]
        entries = [eid for eid, e in self.entries.items() if lid in {slug(l) for l in _as_list(e.get("lanes"))}]
        out += ["## Cited by", ""]
        out += [f"- playbook: {self.link_entry(e, page)}" for e in entries]
        out += [f"- card: {self.link_card(c, page)}" for c in cards]
        if not cards and not entries:
            out.append("Nothing cites this lane yet.")
        return "\n".join(out) + "\n"

    def lanes_index(self) -> str:
        page = "lanes/index.md"
        out = [frontmatter("Lanes"), "# Lanes", "",
               "Runnable validation lanes from `playbook/lanes.yaml`. Each one sends real requests to an SGLang "
               "(or sglang-omni) server it launches or one you name with `--server-url`, checks the answers and "
               "measures latency; `--dry-run` prints what it would do.", "",
               "| Lane | What it runs | Dry run |", "|---|---|---|"]
        for lid, lane in self.lanes.items():
            cmd = f"dossier lanes run {lane.get('id', lid)} -- --dry-run"
            out.append(f"| {self.link_lane(lid, page)} | {cell(lane.get('title', ''))} | `{cell(cmd)}` |")
        return "\n".join(out) + "\n"

    def measurements_page(self) -> str:
        """Every measurement record, sortable by any column (docs/javascripts/tablesort.js)."""
        from . import measurements as ms

        page = "measurements.md"
        out = [frontmatter("Measurements"), "# Measured on H200", "",
               "Op-level reproductions of perf PRs and of sglang-omni's open items (`playbook/repros/`), run on "
               "the lent H200 with random inputs and weights at real model sizes. Each record carries the device "
               "and the sha256 of the script that produced it; `dossier check` (M002) fails when a script changed "
               "since. Click a column heading to sort.", "",
               "| Subject | Technique | Speedup (before/after) | Cases | Device | Measured | Script |",
               "|---|---|---|---|---|---|---|"]
        for subject, (_, rec, err) in sorted(ms.records(self.root).items()):
            if err or not isinstance(rec, dict) or ms.problems(rec):
                continue
            cid = subject.replace("#", "/")
            label = self.link_card(cid, page, subject) if cid in self.cards else cell(subject)
            out.append(f"| {label} | {cell(rec['technique'])} | {ms.headline(rec)} | {len(rec['cases'])} | "
                       f"{cell(rec['device']['gpu'])} | {rec['measured']} | `{rec['script']}` |")
        return "\n".join(out) + "\n"

    def coverage(self) -> str:
        """The home page's figures, counted from the tree."""
        per_repo: dict[str, int] = {}
        for cid in self.cards:
            per_repo[cid.split("/")[0]] = per_repo.get(cid.split("/")[0], 0) + 1
        locks = len(list(self.config.evidence_dir.glob("*/*.json")))
        radar = _radar_count(self.root)
        figures = [("Cards", len(self.cards), "cards/index.md"),
                   ("Evidence locks", locks, "cards/index.md"),
                   ("Playbook entries", len(self.entries), "playbook/index.md"),
                   ("Lanes", len(self.lanes), "lanes/index.md")]
        if radar is not None:
            figures.append(("Radar entries", radar, "radar.md"))
        out = [f"**{self.config.as_of}**", "", "| Figure | Count |", "|---|---:|"]
        out += [f"| [{name}]({link}) | {n} |" for name, n, link in figures]
        out += ["", "### Cards per repository", "", "| Repository | Upstream | Cards |", "|---|---|---:|"]
        for name, repo in self.config.repos.items():
            out.append(f"| `{name}` | [{repo.upstream}](https://github.com/{repo.upstream}) | {per_repo.get(name, 0)} |")
        states: dict[str, dict[str, int]] = {}
        from . import supersede as sup

        for cid in self.cards:
            entry = sup.for_card(self.root, cid, self.supersession)
            if entry:
                bucket = states.setdefault(cid.split("/")[0], {})
                bucket[entry["state"]] = bucket.get(entry["state"], 0) + 1
        if states:
            out += ["", "### Cards' code at the pinned SHA", "",
                    "| Repository | Live | Partly superseded | Gone |", "|---|---:|---:|---:|"]
            for name, b in sorted(states.items()):
                out.append(f"| `{name}` | {b.get('live', 0)} | {b.get('partly superseded', 0)} | {b.get('gone', 0)} |")
        out += ["", "### Cards per family", "", "| Family | Cards |", "|---|---:|"]
        for name in self.config.families:
            n = sum(1 for r in self.rows.values() if name in r["families"])
            out.append(f"| {self.link_family(name, 'index.md')} | {n} |")
        return "\n".join(out)


# ---- helpers -------------------------------------------------------------------------


_ENTRY_HEADINGS = {"look": "Where to look", "prs": "Related PRs", "sublane": "Sub-lane",
                   "knobs": "Knobs", "measure": "What to measure"}


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _entry_symptom(entry: dict) -> str:
    return str(entry.get("symptom") or entry.get("title") or "").strip()


def _public(value):
    """Drop loader bookkeeping (keys starting with '_') from nested data."""
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


def _lane_command(lane: dict) -> str:
    """The script command line `dossier lanes run` would use, with a plain `python`."""
    argv = ["python", str(lane.get("script", "")), *map(str, _as_list(lane.get("args")))]
    if lane.get("model"):
        argv += ["--model", str(lane["model"])]
    return shlex.join(argv)


def _yaml_block(value) -> str:
    value = _public(value)
    if isinstance(value, (str, int, float)):
        return str(value)
    return "```yaml\n" + yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100).strip() + "\n```"


def _outside_code(text: str, func) -> str:
    """Apply func to the parts of Markdown outside fenced code blocks."""
    out, chunk, fenced = [], [], False
    for line in text.split("\n"):
        if _FENCE.match(line):
            if not fenced:
                out.append(func("\n".join(chunk)) if chunk else None)
                chunk = []
            fenced = not fenced
            out.append(line)
        elif fenced:
            out.append(line)
        else:
            chunk.append(line)
    if chunk:
        out.append(func("\n".join(chunk)))
    return "\n".join(x for x in out if x is not None)


def _diff_fences(body: str) -> str:
    """Fences under "Key code excerpts" become ```diff blocks, whatever the card wrote."""
    out, section, fenced = [], "", False
    for line in body.split("\n"):
        m = _FENCE.match(line)
        if m:
            if not fenced and section == "Key code excerpts":
                line = f"{m.group(1)}{m.group(2)}diff"
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            section = line[3:].strip()
        out.append(line)
    return "\n".join(out)


def _link_excerpt_heads(body: str, url: str) -> str:
    """Each excerpt heading gets a link to that file in the upstream PR's diff view."""
    if not url:
        return body

    def add(m: re.Match) -> str:
        anchor = hashlib.sha256(m.group(2).encode()).hexdigest()
        return f"{m.group(0)}\n\n[view in the PR]({url}/files#diff-{anchor})"

    return _outside_code(body, lambda chunk: re.sub(r"^(###\s+`([^`]+)`.*)$", add, chunk, flags=re.M))


def _script_doc(path: Path) -> str:
    """A lane script's module docstring: what it sends and measures."""
    try:
        return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError, ValueError):
        return ""


def _radar_count(root: Path) -> int | None:
    """Items on the radar (references/radar.yaml), or None without one."""
    try:
        from . import radar
    except ImportError:
        return None
    loaded = radar.load(root) if hasattr(radar, "load") else None
    return len(loaded.items) if loaded is not None else None


def build_site(config: Config) -> tuple[dict[str, str], str]:
    """(pages by docs path, the home page's coverage block)."""
    site = Site(config)
    pages = site.render()
    return pages, site.coverage()

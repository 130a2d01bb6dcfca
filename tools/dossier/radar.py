"""The radar: open PRs and issues that matter for a lane but have no merged diff yet.

references/radar.yaml is hand-written. `dossier radar` lists it with ages,
`dossier radar --refresh` asks GitHub for each numbered entry's state and
rewrites only `state` and `last_checked` in place (comments and every other
field stay as written), and `dossier build` renders references/radar.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import yaml

from .config import Config
from .errors import DossierError
from .fsio import read_text
from .yamlio import YamlError, line_of, parse_yaml

RADAR_FILE = "references/radar.yaml"
KINDS = ("pr", "issue")
STATES = ("open", "closed", "merged")
REQUIRED = ("id", "repo", "number", "kind", "title", "state", "last_checked", "lanes", "files", "symptom")
LISTS = ("lanes", "files", "symbols", "symptoms", "knobs")


@dataclass
class Item:
    data: dict
    line: int  # line of the item's first key
    key_lines: dict[str, int] = field(default_factory=dict)
    spans: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # key -> (start, end, key column)

    def at(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


@dataclass
class Radar:
    path: Path
    text: str
    items: list[Item]
    problems: list[tuple[int, str]]  # (line, message): the file is malformed


def radar_path(root: Path) -> Path:
    return Path(root) / RADAR_FILE


def today() -> date:
    """Today's date; DOSSIER_TODAY=YYYY-MM-DD pins it (tests, reproducible builds)."""
    pinned = os.environ.get("DOSSIER_TODAY")
    if not pinned:
        return date.today()
    try:
        return date.fromisoformat(pinned)
    except ValueError:
        raise DossierError(f"DOSSIER_TODAY must be YYYY-MM-DD, got {pinned!r}") from None


def as_date(value) -> date | None:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        return None


# --- loading and validation ---------------------------------------------------------


def load(root: Path, repos=None) -> Radar | None:
    """The radar with line numbers, or None if there is no radar file.

    Content problems (broken YAML, missing fields) are collected, not raised,
    so `dossier check` can report them as R001 findings.
    """
    path = radar_path(root)
    if not path.exists():
        return None
    try:
        text = read_text(path, root)
    except DossierError as exc:
        return Radar(path, "", [], [(1, str(exc).split(": ", 1)[-1])])
    try:
        data = parse_yaml(text, RADAR_FILE)
    except YamlError as exc:
        return Radar(path, text, [], [(exc.line, f"invalid YAML: {exc.problem}")])
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        return Radar(path, text, [], [(1, "the radar must be a mapping with an `items:` list")])
    items = [_item(d, line_of(data["items"], index=i)) for i, d in enumerate(data["items"])]
    return Radar(path, text, items, validate(items, repos))


def _item(data, line: int) -> Item:
    if not isinstance(data, dict):
        return Item({"_not_mapping": True}, line)
    return Item(data, line, dict(data.key_lines), dict(data.spans))


def validate(items: list[Item], repos=None) -> list[tuple[int, str]]:
    problems, seen = [], set()
    for item in items:
        d = item.data
        if d.get("_not_mapping"):
            problems.append((item.line, "radar item is not a mapping"))
            continue
        name = d.get("id") or f"item at line {item.line}"
        missing = [k for k in REQUIRED if k not in d]
        if missing:
            problems.append((item.line, f"{name}: missing {', '.join(missing)}"))
        if "id" in d:
            if not isinstance(d["id"], str) or not d["id"].strip():
                problems.append((item.at("id"), "id must be a non-empty string"))
            elif d["id"] in seen:
                problems.append((item.at("id"), f"duplicate id {d['id']}"))
            seen.add(d.get("id"))
        if "repo" in d and repos is not None and d["repo"] not in repos:
            problems.append((item.at("repo"), f"{name}: unknown repo {d['repo']!r} (known: {', '.join(sorted(repos))})"))
        number = d.get("number")
        if number is not None and (not isinstance(number, int) or isinstance(number, bool) or number <= 0):
            problems.append((item.at("number"), f"{name}: number must be a positive integer or null"))
        if "kind" in d and d["kind"] not in KINDS:
            problems.append((item.at("kind"), f"{name}: kind must be one of {', '.join(KINDS)}"))
        if "state" in d and d["state"] not in STATES:
            problems.append((item.at("state"), f"{name}: state must be one of {', '.join(STATES)}"))
        elif d.get("kind") == "issue" and d.get("state") == "merged":
            problems.append((item.at("state"), f"{name}: an issue cannot be merged"))
        if "last_checked" in d and as_date(d["last_checked"]) is None:
            problems.append((item.at("last_checked"), f"{name}: last_checked must be a date YYYY-MM-DD"))
        for key in ("title", "symptom"):
            if key in d and (not isinstance(d[key], str) or not d[key].strip()):
                problems.append((item.at(key), f"{name}: {key} must be non-empty text"))
        for key in LISTS:
            value = d.get(key)
            if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
                problems.append((item.at(key), f"{name}: {key} must be a list of strings"))
        if "lanes" in d and not d["lanes"]:
            problems.append((item.at("lanes"), f"{name}: name at least one lane"))
        merged = d.get("upstream_merged")
        if merged is not None:
            if not isinstance(merged, list) or not all(
                    isinstance(m, dict) and isinstance(m.get("pr"), int) and not isinstance(m.get("pr"), bool)
                    and isinstance(m.get("what"), str) and m["what"].strip() for m in merged):
                problems.append((item.at("upstream_merged"),
                                 f"{name}: upstream_merged must be a list of {{pr: N, what: text}}"))
        if "remains" in d and (not isinstance(d["remains"], str) or not d["remains"].strip()):
            problems.append((item.at("remains"), f"{name}: remains must be non-empty text"))
        rel = d.get("release")
        if rel is not None and (not isinstance(rel, dict) or not rel.get("version") or not rel.get("file")
                                or not isinstance(rel.get("symbols"), list) or not rel["symbols"]):
            problems.append((item.at("release"), f"{name}: release must map version, file and symbols (a list): "
                                                 "where the newest release holds what the pinned history lacks"))
        status = d.get("path_status")
        if status is not None:
            if not isinstance(status, dict):
                problems.append((item.at("path_status"), f"{name}: path_status must map a file to a note"))
            else:
                for path in status:
                    if path not in (d.get("files") or []):
                        problems.append((item.at("path_status"), f"{name}: path_status names {path}, which is not in files"))
    return problems


# --- refresh --------------------------------------------------------------------


def _scalar(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True, allow_unicode=True).strip().removesuffix("\n...").strip()


def apply_updates(radar: Radar, updates: dict[str, dict]) -> str:
    """Rewrite only the updated fields' values in the radar text; everything else stays byte for byte."""
    edits = []  # (start, end, replacement)
    for item in radar.items:
        for key, value in updates.get(item.data.get("id"), {}).items():
            if key in item.spans:
                start, end, _ = item.spans[key]
                edits.append((start, end, _scalar(value)))
            else:  # a missing field goes on a new line after the id
                _, end, column = item.spans["id"]
                edits.append((end, end, "\n" + " " * column + f"{key}: {_scalar(value)}"))
    text = radar.text
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


@dataclass
class RefreshReport:
    text: str
    lines: list[str]
    failures: list[str]


def load_or_fail(config: Config, when_missing: str, hint: str = ""):
    """The radar for a command that needs a usable one: one clear error line otherwise."""
    radar = load(config.root, config.repos)
    if radar is None:
        raise DossierError(f"no {RADAR_FILE}; {when_missing}")
    if radar.problems:
        line, message = radar.problems[0]
        raise DossierError(f"{RADAR_FILE}:{line}: {message}{hint}")
    return radar


def refresh(config: Config, api_url: str | None = None) -> RefreshReport:
    """Ask GitHub for the state of every numbered entry; return the new text and a report."""
    from .extras import require

    require("github", "dossier radar --refresh")
    import requests
    from github.GithubException import GithubException

    from .sources import github as github_source

    radar = load_or_fail(config, "nothing to refresh", "; fix it before refreshing")
    root = github_source.api_root(api_url)
    gh = github_source.client(root).withLazy(True)
    checked = today().isoformat()
    updates, lines, failures = {}, [], []
    for item in radar.items:
        d = item.data
        if d["number"] is None:
            lines.append(f"{d['id']}: no number yet; check it by hand")
            continue
        upstream = config.repo(d["repo"]).upstream
        where = f"{upstream}#{d['number']}"
        try:
            repo = gh.get_repo(upstream)
            if d["kind"] == "pr":
                state = github_source.pull_state(repo.get_pull(d["number"]))
            else:
                state = repo.get_issue(d["number"]).state
        except (GithubException, requests.exceptions.RequestException) as exc:
            failures.append(f"{d['id']}: {github_source.describe(exc, where, root)}")
            continue
        updates[d["id"]] = {"state": state, "last_checked": date.fromisoformat(checked)}
        change = f"{d['state']} -> {state}" if state != d["state"] else f"still {state}"
        lines.append(f"{d['id']}: {where} {change}")
        if state == "merged" and d["kind"] == "pr":
            lines.append(f"  next: dossier fetch {d['repo']} {d['number']} && dossier new {d['repo']} {d['number']}")
    text = apply_updates(radar, updates)
    _verify(text, radar, updates)
    return RefreshReport(text, lines, failures)


def _verify(text: str, before: Radar, updates: dict) -> None:
    """The edited text must parse to the old data plus exactly the updates."""
    try:
        after = parse_yaml(text, RADAR_FILE)
    except YamlError:
        raise DossierError(f"{RADAR_FILE}: refresh would break the YAML; file left as it was") from None
    expected = [dict(i.data, **updates.get(i.data.get("id"), {})) for i in before.items]
    if after.get("items") != expected:
        raise DossierError(f"{RADAR_FILE}: refresh would change more than state/last_checked; file left as it was")


# --- rendering --------------------------------------------------------------------



def _row(config: Config, item: Item) -> dict:
    d = item.data
    repo = config.repos.get(d.get("repo"))
    number = d.get("number")
    url = None
    if repo and isinstance(number, int):
        url = f"https://github.com/{repo.upstream}/{'pull' if d.get('kind') == 'pr' else 'issues'}/{number}"
    text = lambda v: " ".join(str(v or "").split())  # noqa: E731  one line for tables and bullets
    status = d.get("path_status") if isinstance(d.get("path_status"), dict) else {}
    return {
        "id": str(d.get("id", "")),
        "title": text(d.get("title")),
        "repo": str(d.get("repo", "")),
        "number": number,
        "url": url,
        "kind": str(d.get("kind", "")),
        "state": str(d.get("state", "")),
        "last_checked": str(d.get("last_checked", "")),
        "lanes": [str(v) for v in d.get("lanes") or []],
        "symptoms": [str(v) for v in d.get("symptoms") or []],
        "files": [(str(f), text(status.get(f))) for f in d.get("files") or []],
        "symbols": [str(v) for v in d.get("symbols") or []],
        "knobs": [str(v) for v in d.get("knobs") or []],
        "symptom": text(d.get("symptom")),
        "notes": text(d.get("notes")),
        "source": text(d.get("source")),
        "upstream_merged": [{"pr": m["pr"], "what": text(m.get("what"))} for m in d.get("upstream_merged") or []
                            if isinstance(m, dict) and isinstance(m.get("pr"), int)],
        "remains": text(d.get("remains")),
        "release": _release_row(d.get("release")),
    }


def _release_row(rel) -> dict | None:
    if not isinstance(rel, dict):
        return None
    return {"version": str(rel.get("version", "")), "file": str(rel.get("file", "")),
            "symbols": [str(v) for v in rel.get("symbols") or []]}


def render_markdown(ctx) -> str:
    radar = ctx.radar
    items = [_row(ctx.config, i) for i in (radar.items if radar else []) if not i.data.get("_not_mapping")]
    from .render import render

    return render("radar.md.j2", as_of=ctx.config.as_of, items=items, max_age=ctx.config.radar_max_age_days)

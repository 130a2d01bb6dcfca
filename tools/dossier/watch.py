"""`dossier watch`: what upstream did since the pins, so a refresh is triggered by the tool.

Three questions, each answered from its own source:

- merged PRs on the families' paths after the pinned SHA with neither card nor exclusion:
  from a clone (first-parent commits `pin..ref`), or from the GitHub API through PyGithub
  (closed PRs merged after the pin's date, their files matched against the family globs);
- releases on the package index newer than each repo's `release` pin (its JSON API,
  `/pypi/<package>/json`);
- radar items whose upstream state changed (the same questions `dossier radar --refresh`
  asks, nothing written).

Rate limits, a rejected token and an unreachable API or index each stop with one line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .config import Config
from .errors import DossierError

DEFAULT_INDEX = "https://pypi.org"


@dataclass
class Report:
    prs: list[dict] = field(default_factory=list)
    releases: list[dict] = field(default_factory=list)
    radar: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why

    @property
    def todo(self) -> bool:
        return bool(self.prs or self.releases or self.radar)

    def as_dict(self) -> dict:
        return {"todo": self.todo, "prs": self.prs, "releases": self.releases, "radar": self.radar, "notes": self.notes}

    def text(self) -> str:
        out = []
        for p in self.prs:
            out.append(f"new PR  {p['repo']}#{p['pr']} {p['date']} [{', '.join(p['families'])}] {p['title']}"
                       f"\n        next: dossier fetch {p['repo']} {p['pr']} && dossier new {p['repo']} {p['pr']}"
                       " (or add an exclusion)")
        for r in self.releases:
            out.append(f"release {r['package']} {r['version']} ({r['date'] or '?'}) is newer than the pinned "
                       f"{r['pinned']}\n        next: pip download --no-deps {r['package']}=={r['version']} && "
                       f"dossier tree {r['repo']} --wheel WHEEL, then bump release in dossier.toml")
        for r in self.radar:
            out.append(f"radar   {r['id']}: {r['was']} -> {r['now']}\n        next: dossier radar --refresh")
        out += [f"note    {n}" for n in self.notes]
        out.append(f"{len(self.prs)} new PRs, {len(self.releases)} newer releases, {len(self.radar)} radar changes"
                   + ("" if self.todo else ": nothing to do"))
        return "\n".join(out)


def _families_hit(config: Config, repo: str, files: list[str]) -> list[str]:
    return [f.name for f in config.families.values() if any(f.matches(repo, p) for p in files)]


def _status(config: Config, repo: str, pr: int, exclusions) -> str:
    if config.card_path(repo, pr).exists():
        return "card"
    return "excluded" if (repo, pr) in exclusions else "missing"


def prs_from_clone(config: Config, repo: str, clone: str, ref: str) -> list[dict]:
    from .sources.git import History, open_clone
    from .trace import trace

    pin = config.repo(repo).pinned
    if not pin:
        raise DossierError(f"{repo} has no pinned SHA in dossier.toml; nothing to watch from")
    history = History(open_clone(clone), ref)
    head = history._resolve_ref()
    try:
        history.repo.git.merge_base("--is-ancestor", pin, head)
    except Exception:  # noqa: BLE001 - git's message is long; one line is enough
        # Also when the pin is not in the clone at all. Without this, `pin..ref` on a fork's
        # unrelated branch lists the fork's own commits as new upstream PRs.
        raise DossierError(f"{repo}: {ref!r} of {clone} does not contain the pinned {pin[:12]}; "
                           f"pass a ref that does (--ref {repo}=REF)") from None
    new = set(history.repo.git.rev_list("--first-parent", f"{pin}..{head}").split())
    rows = trace(config, repo, clone, [n for n, f in config.families.items() if f.globs.get(repo)
                                       or any(x.repo == repo for x in f.former)], ref=head)
    return [{"repo": repo, "pr": r.pr, "commit": r.commit, "date": r.date, "title": r.title, "families": r.families,
             "files": r.files[:10]} for r in rows if r.status == "missing" and any(c.startswith(r.commit) for c in new)]


def prs_from_github(config: Config, repo: str, api_url: str | None = None) -> list[dict]:
    import requests
    from github.GithubException import GithubException

    from .sources import github as gh_source
    from .trace import load_exclusions

    spec = config.repo(repo)
    if not spec.pinned_date:
        raise DossierError(f"{repo} has no pinned_date in dossier.toml; nothing to watch from")
    since = datetime.fromisoformat(spec.pinned_date).replace(tzinfo=timezone.utc)
    root = gh_source.api_root(api_url)
    exclusions = load_exclusions(config.root)
    out = []
    try:
        gh = gh_source.client(root).withLazy(True)
        pulls = gh.get_repo(spec.upstream).get_pulls(state="closed", sort="updated", direction="desc",
                                                                base=spec.default_branch)
        for pull in pulls:
            updated = pull.updated_at.replace(tzinfo=pull.updated_at.tzinfo or timezone.utc)
            if updated < since:
                break  # sorted by update time: nothing older can have merged after the pin
            merged = pull.merged_at
            if not merged or merged.replace(tzinfo=merged.tzinfo or timezone.utc) <= since:
                continue
            files = [f.filename for f in pull.get_files()]
            fams = _families_hit(config, repo, files)
            if fams and _status(config, repo, pull.number, exclusions) == "missing":
                out.append({"repo": repo, "pr": pull.number, "date": merged.date().isoformat(), "title": pull.title,
                            "families": fams, "files": [p for p in files if _families_hit(config, repo, [p])][:10]})
    except (GithubException, requests.exceptions.RequestException) as exc:
        raise DossierError(gh_source.describe(exc, f"{spec.upstream} pulls", root)) from None
    return sorted(out, key=lambda p: (p["date"], p["pr"]), reverse=True)


def _version_key(v: str):
    from packaging.version import InvalidVersion, Version

    try:
        return Version(v)
    except InvalidVersion:
        return None


def newer_releases(config: Config, index_url: str | None = None, timeout: float = 20.0) -> list[dict]:
    """Releases of each pinned repo's package newer than its `release` pin, from the index's JSON API."""
    import requests

    base = (index_url or os.environ.get("DOSSIER_INDEX_URL") or DEFAULT_INDEX).rstrip("/")
    out = []
    for name, repo in config.repos.items():
        if not repo.release:
            continue
        url = f"{base}/pypi/{repo.package or name}/json"
        try:
            resp = requests.get(url, timeout=timeout, headers={"Accept": "application/json"})
        except requests.exceptions.RequestException as exc:
            raise DossierError(f"cannot reach the package index at {base}: {type(exc).__name__}") from None
        if resp.status_code == 404:
            raise DossierError(f"the package index at {base} has no package {repo.package or name!r}")
        if resp.status_code == 429:
            raise DossierError(f"the package index at {base} is rate limiting (429); try again later")
        if resp.status_code != 200:
            raise DossierError(f"the package index at {base} answered {resp.status_code} for {url}")
        try:
            releases = resp.json().get("releases") or {}
        except ValueError:
            raise DossierError(f"the package index at {base} sent no JSON for {url}") from None
        pinned = _version_key(repo.release)
        for version, files in releases.items():
            key = _version_key(version)
            if key is None or pinned is None or key <= pinned or key.is_prerelease or not files:
                continue
            if all(f.get("yanked") for f in files if isinstance(f, dict)):
                continue
            dates = sorted(str(f.get("upload_time", ""))[:10] for f in files if isinstance(f, dict))
            out.append({"repo": name, "package": repo.package or name, "version": version, "pinned": repo.release,
                        "date": dates[0] if dates else None})
    return sorted(out, key=lambda r: (r["repo"], _version_key(r["version"])))


def radar_changes(config: Config, api_url: str | None = None) -> tuple[list[dict], list[str]]:
    from . import radar

    if radar.load(config.root, config.repos) is None:
        return [], []
    report = radar.refresh(config, api_url)
    before = {i.data["id"]: i.data for i in radar.load(config.root, config.repos).items}
    changed = []
    for line in report.lines:
        if " -> " in line and ":" in line:
            rid = line.split(":", 1)[0]
            was, now = line.rsplit(" ", 3)[-3], line.rsplit(" ", 1)[-1]
            changed.append({"id": rid, "number": before.get(rid, {}).get("number"), "was": was, "now": now})
    return changed, report.failures


def watch(config: Config, clones: dict[str, str], ref: str | dict[str, str] = "HEAD", api_url: str | None = None,
          index_url: str | None = None, skip: tuple[str, ...] = ()) -> Report:
    """`ref` is one ref for every clone, or {repo: ref} (a repo left out reads HEAD)."""
    refs = ref if isinstance(ref, dict) else {name: ref for name in config.repos}
    report = Report()
    if "prs" not in skip:
        for name in config.repos:
            if not config.repo(name).pinned:
                continue
            if name in clones:
                report.prs += prs_from_clone(config, name, clones[name], refs.get(name, "HEAD"))
            else:
                report.prs += prs_from_github(config, name, api_url)
    if "releases" not in skip:
        report.releases = newer_releases(config, index_url)
    if "radar" not in skip:
        report.radar, report.notes = radar_changes(config, api_url)
    return report

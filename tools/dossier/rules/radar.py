"""Radar rules (R): references/radar.yaml must be well-formed, current and linked."""

from __future__ import annotations

from .base import Finding, rule


def _radar(ctx):
    """The radar (None when the knowledge base has none)."""
    return ctx.radar


def _valid_items(ctx):
    """Items of a radar that loads without R001 problems (other rules need its shape)."""
    r = _radar(ctx)
    return [] if r is None or r.problems else r.items


def _f(ctx, line, code, msg):
    from ..radar import RADAR_FILE

    return Finding(RADAR_FILE, line, 1, code, msg)


@rule("R001", "radar-malformed", scope="project")
def radar_malformed(ctx):
    """references/radar.yaml is not valid YAML or an entry lacks a required field.

    Each entry needs id, repo, number (or null), kind (pr|issue), title, state
    (open|closed|merged), last_checked (YYYY-MM-DD), lanes, files and symptom.
    Other rules skip a malformed radar, so fix this first.
    """
    r = _radar(ctx)
    for line, message in r.problems if r else []:
        yield _f(ctx, line, "R001", message)


@rule("R002", "radar-merged-without-card", scope="project")
def radar_merged_without_card(ctx):
    """A radar PR has merged but has no card yet.

    Its diff now exists: fetch the lock and write the card (`dossier fetch REPO N`,
    `dossier new REPO N`), then drop the radar entry or keep it until the card lands.
    """
    for item in _valid_items(ctx):
        d = item.data
        if d["kind"] == "pr" and d["state"] == "merged" and d["number"]:
            if f"{d['repo']}/{d['number']}" not in ctx.card_ids:
                yield _f(ctx, item.at("state"), "R002",
                         f"{d['id']}: {d['repo']}#{d['number']} has merged but has no card; "
                         f"run `dossier fetch {d['repo']} {d['number']}` and `dossier new {d['repo']} {d['number']}`")


@rule("R007", "radar-resolution-without-card", scope="project")
def radar_resolution_without_card(ctx):
    """A radar entry says upstream merged a PR for it (`upstream_merged`) that has no card.

    An item resolved upstream says by which PR, and that PR is read from its diff like any
    other: write its card (`dossier fetch REPO N`, `dossier new REPO N`) or drop the line.
    """
    for item in _valid_items(ctx):
        d = item.data
        for m in d.get("upstream_merged") or []:
            if isinstance(m, dict) and f"{d['repo']}/{m.get('pr')}" not in ctx.card_ids:
                yield _f(ctx, item.at("upstream_merged"), "R007",
                         f"{d['id']}: upstream_merged names {d['repo']}#{m.get('pr')}, which has no card")


@rule("R003", "radar-stale", scope="project")
def radar_stale(ctx):
    """A radar entry was last checked longer ago than `[radar] max_age_days` (default 30).

    Open items move; run `dossier radar --refresh` (or check an entry without a
    number by hand) and update `last_checked`.
    """
    from ..radar import as_date, today

    now, limit = today(), ctx.config.radar_max_age_days
    for item in _valid_items(ctx):
        age = (now - as_date(item.data["last_checked"])).days
        if age > limit:
            yield _f(ctx, item.at("last_checked"), "R003",
                     f"{item.data['id']}: last checked {age} days ago (max {limit}); run `dossier radar --refresh`")


@rule("R004", "radar-unknown-file", scope="project")
def radar_unknown_file(ctx):
    """A radar entry names a file that no evidence lock or tree listing knows.

    Paths are checked against the locks and references/trees/<repo>.txt. A file
    that really is newer than the stored listing stays, with a `path_status`
    note saying so; once the listing has the file, the note must go.
    """
    for item in _valid_items(ctx):
        d = item.data
        known = ctx.known_files.get(d["repo"], set())
        noted = d.get("path_status") or {}
        for path in d["files"]:
            if path in known and path in noted:
                yield _f(ctx, item.at("path_status"), "R004",
                         f"{d['id']}: path_status says {path} is not listed, but it is now; drop the note")
            elif path not in known and path not in noted:
                yield _f(ctx, item.at("files"), "R004",
                         f"{d['id']}: file {path} is in no lock or tree listing of {d['repo']}; "
                         "fix the path or explain it under path_status")


@rule("R005", "radar-unknown-link", scope="project")
def radar_unknown_link(ctx):
    """A radar entry names a lane not in playbook/lanes.yaml or a playbook entry that does not exist."""
    for item in _valid_items(ctx):
        d = item.data
        for lane in d["lanes"]:
            if lane not in ctx.lanes:
                yield _f(ctx, item.at("lanes"), "R005", f"{d['id']}: unknown lane {lane!r}")
        for symptom in d.get("symptoms") or []:
            if symptom not in ctx.playbook_ids:
                yield _f(ctx, item.at("symptoms"), "R005", f"{d['id']}: no playbook entry {symptom!r}")


@rule("R006", "radar-release-claim", scope="project")
def radar_release_claim(ctx):
    """A radar entry's `release` claim does not hold in that release's listing.

    Releases run ahead of the pinned history. An open radar item whose code the newest
    release already holds says so: `release: {version, file, symbols}` ("present in
    release X, merged after the pinned history"). The claim is checked against
    `references/trees/<repo>-release.json`: the version must be the one listed, the file
    must ship in the wheel, and each symbol must be a name the file defines or uses.
    """
    for item in _valid_items(ctx):
        d = item.data
        rel = d.get("release")
        if not isinstance(rel, dict):
            continue
        listing = ctx.releases.get(d["repo"])
        if listing is None:
            yield _f(ctx, item.at("release"), "R006", f"{d['id']}: no release listing for {d['repo']}; "
                                                      f"run `dossier tree {d['repo']} --wheel WHEEL`")
            continue
        if str(rel["version"]) != listing["version"]:
            yield _f(ctx, item.at("release"), "R006", f"{d['id']}: release {rel['version']} is not the listed "
                                                      f"{d['repo']} {listing['version']}; check it there")
            continue
        path = str(rel["file"])
        if path not in listing["paths"]:
            yield _f(ctx, item.at("release"), "R006", f"{d['id']}: {path} is not in {d['repo']} {listing['version']}")
            continue
        names = set(listing.get("identifiers", {}).get(path, [])) | \
            {n.rsplit(".", 1)[-1] for n in listing.get("symbols", {}).get(path, [])}
        if path not in listing.get("identifiers", {}):
            yield _f(ctx, item.at("release"), "R006", f"{d['id']}: the release listing has no names for {path}; "
                                                      f"list the wheel again (`dossier tree {d['repo']} --wheel WHEEL`)")
            continue
        for sym in rel["symbols"]:
            if str(sym).rsplit(".", 1)[-1] not in names:
                yield _f(ctx, item.at("release"), "R006", f"{d['id']}: {path} in {listing['version']} has no {sym}")

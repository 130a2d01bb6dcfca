"""Generated-file rules (B): what `dossier build` writes must be up to date."""

from __future__ import annotations

from .base import Finding, rule


@rule("B001", "generated-stale", scope="project")
def generated_stale(ctx):
    """A generated file differs from what `dossier build` would write now.

    `references/pr-history.md`, `references/playbook.md` and the other generated
    pages are rendered from cards, locks and the playbook. Run `dossier build`.
    """
    from ..build import stale_outputs  # jinja2 and the templates: only when B001 runs

    for rel, current, text in stale_outputs(ctx):
        if current is None:
            yield Finding(rel, 1, 1, "B001", "generated file is missing; run `dossier build`")
        else:
            a, b = current.split("\n"), text.split("\n")
            line = next((i for i, (x, y) in enumerate(zip(a, b), 1) if x != y), min(len(a), len(b)) + 1)
            yield Finding(rel, line, 1, "B001", "generated file is out of date; run `dossier build`")


@rule("B002", "supersession-stale", scope="project")
def supersession_stale(ctx):
    """`references/supersession.json` misses a card, or a card's lock changed since it was computed.

    What superseded each card is computed from git at the pinned SHA
    (`dossier trace --all --supersede --clone CLONE`, once per repo) and stamped with
    each card's lock digest and the SHA it read. A new card, a re-fetched lock or a
    new pin makes it stale: compute it again. Required for pinned repos only.
    """
    from ..supersede import SUPERSESSION

    repos = ctx.supersession.get("repos", {})
    wrong_ref = set()  # repos computed at another SHA: said once, not per card
    for (repo, pr), lock in sorted(ctx.all_locks.items()):
        if f"{repo}/{pr}" not in ctx.card_ids:
            continue
        if repo in wrong_ref:
            continue
        stored = repos.get(repo)
        pinned = ctx.config.repos[repo].pinned if repo in ctx.config.repos else None
        if not pinned and stored is None:
            continue  # supersession is computed at a pinned SHA; an unpinned repo may go without
        if stored is None:
            yield Finding(SUPERSESSION, 1, 1, "B002", f"no supersession results for {repo}; run `dossier trace --all "
                                                      f"--repo {repo} --supersede --clone CLONE`")
            continue
        if pinned and stored.get("ref") != pinned:
            yield Finding(SUPERSESSION, 1, 1, "B002", f"{repo} was computed at {str(stored.get('ref'))[:12]}, "
                                                      f"not at the pinned {pinned[:12]}; compute it again")
            wrong_ref.add(repo)
            continue
        entry = stored.get("cards", {}).get(str(pr))
        if entry is None:
            yield Finding(SUPERSESSION, 1, 1, "B002", f"{repo}#{pr} has a card but no supersession entry; compute it again")
        elif entry.get("lock") != ctx.lock_sha(lock)[:16]:
            yield Finding(SUPERSESSION, 1, 1, "B002", f"{repo}#{pr}'s lock changed since supersession was computed")


@rule("B003", "release-listing-stale", scope="project")
def release_listing_stale(ctx):
    """A repo's release listing is missing, lists another version than dossier.toml's `release`, or misses a card.

    `references/trees/<repo>-release.json` (`dossier tree REPO --wheel WHEEL`) lists the
    newest release of each repo and, per card, whether the lines its PR added stand in
    the release's files; it is stamped with each card's lock digest. A new release pin,
    a new card or a re-fetched lock makes it stale: list the wheel again. Required only
    for repos whose `release` dossier.toml pins.
    """
    from ..release import listing_path

    for name, repo in ctx.config.repos.items():
        if not repo.release:
            continue
        rel = listing_path(ctx.root, name).relative_to(ctx.root).as_posix()
        listing = ctx.releases.get(name)
        fix = f"run `dossier tree {name} --wheel {repo.package or name}-{repo.release}-...whl`"
        if listing is None:
            yield Finding(rel, 1, 1, "B003", f"no release listing for {name} {repo.release}; {fix}")
            continue
        if listing.get("version") != repo.release:
            yield Finding(rel, 1, 1, "B003", f"lists {name} {listing.get('version')}, but dossier.toml pins "
                                             f"release {repo.release}; {fix}")
            continue
        cards, locks = listing.get("cards", {}), listing.get("locks", {})
        stale = [pr for (r, pr), lock in sorted(ctx.all_locks.items()) if r == name and f"{r}/{pr}" in ctx.card_ids
                 and (str(pr) not in cards or locks.get(str(pr)) != ctx.lock_sha(lock)[:16])]
        if stale:
            shown = ", ".join(f"#{p}" for p in stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
            yield Finding(rel, 1, 1, "B003", f"{len(stale)} {name} card(s) not in the release listing or with a changed "
                                             f"lock ({shown}); {fix}")

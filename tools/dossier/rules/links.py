"""Link rules (L) for cards: lanes and playbook entries a card names must exist."""

from __future__ import annotations

import re

from ..fsio import yaml_loader
from .base import Finding, rule


@rule("L001", "card-unknown-lane")
def card_unknown_lane(ctx, card):
    """The card names a lane that `playbook/lanes.yaml` does not register."""
    meta = card.meta or {}
    for lane in meta.get("lanes") or []:
        if lane not in ctx.lanes:
            yield Finding(ctx.rel(card.path), card.key_line("lanes"), 1, "L001", f"unknown lane '{lane}'")


@rule("L002", "card-unknown-symptom")
def card_unknown_symptom(ctx, card):
    """The card names a playbook symptom id that no playbook entry has."""
    meta = card.meta or {}
    for sid in meta.get("symptoms") or []:
        if sid not in ctx.playbook_ids:
            yield Finding(ctx.rel(card.path), card.key_line("symptoms"), 1, "L002", f"unknown playbook symptom '{sid}'")


@rule("L020", "trace-exclusion", scope="project")
def trace_exclusion(ctx):
    """A trace exclusion is malformed, has no reason, repeats, or excludes a PR that has a card.

    `references/trace-exclusions.yaml` lists PRs that a family glob catches but that are
    off-lane (a lint sweep, a CI rename, another model's change). Each needs repo, pr and
    a reason of at least a few words, so nothing is dropped silently.
    """
    import yaml

    from ..trace import EXCLUSIONS

    path = ctx.root / EXCLUSIONS
    if not path.exists():
        return
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml_loader())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        yield Finding(EXCLUSIONS, (mark.line + 1) if mark else 1, 1, "L020", f"invalid YAML: {getattr(exc, 'problem', exc)}")
        return
    if root is None:
        return
    if not isinstance(root, yaml.SequenceNode):
        yield Finding(EXCLUSIONS, 1, 1, "L020", "exclusions must be a list of {repo, pr, reason}")
        return
    seen = set()
    for node in root.value:
        line = node.start_mark.line + 1
        entry = yaml.load(Loader=yaml_loader(), stream=yaml.serialize(node)) if isinstance(node, yaml.MappingNode) else None
        if not isinstance(entry, dict) or not {"repo", "pr"} <= set(entry):
            yield Finding(EXCLUSIONS, line, 1, "L020", "exclusion needs repo and pr")
            continue
        key = (str(entry["repo"]), entry["pr"])
        if len(str(entry.get("reason") or "").split()) < 3:
            yield Finding(EXCLUSIONS, line, 1, "L020", f"{key[0]}#{key[1]} needs a reason of at least three words")
        if key in seen:
            yield Finding(EXCLUSIONS, line, 1, "L020", f"{key[0]}#{key[1]} is listed twice")
        seen.add(key)
        if f"{key[0]}/{key[1]}" in ctx.card_ids:
            yield Finding(EXCLUSIONS, line, 1, "L020", f"{key[0]}#{key[1]} has a card; it cannot also be excluded")


@rule("L030", "family-glob-matches-nothing", scope="project")
def family_glob_matches_nothing(ctx):
    """A family glob in dossier.toml matches no file that a tree listing or lock knows.

    Globs drift when upstream moves files; a glob that matches nothing silently drops
    PRs from `dossier trace`. Checked only for repos that have a tree listing under
    references/trees/.
    """
    from ..config import CONFIG_NAME, _glob_regex

    if ctx.card_paths is not None:
        return
    known = ctx.known_files
    trees = ctx.root / "references" / "trees"
    lines = (ctx.root / CONFIG_NAME).read_text(encoding="utf-8").split("\n")
    for fam in ctx.config.families.values():
        for repo, globs in fam.globs.items():
            if not (trees / f"{repo}.txt").exists():
                continue
            listing = "\n".join(sorted(known.get(repo, ())))
            for g in globs:
                # One multiline regex scan over the whole listing instead of a match per path.
                pattern = _glob_regex(g).pattern.lstrip("^").rstrip("$")
                if not re.search(f"^{pattern}$", listing, re.MULTILINE):
                    line = next((i for i, l in enumerate(lines, 1) if f'"{g}"' in l), 1)
                    yield Finding(CONFIG_NAME, line, 1, "L030", f"{fam.name} glob {g!r} matches no known {repo} file")


@rule("L009", "symptom-not-cited-back", scope="project")
def symptom_not_cited_back(ctx):
    """A card names a playbook symptom whose entry does not list the card.

    The card's `symptoms:` and the entry's `cards:` must agree, or the playbook sends
    users past the PR that changed their path. `dossier link` adds the citations.
    """
    from ..link import missing_links

    for rel, number, entry, add in missing_links(ctx):
        yield Finding(rel, number, 1, "L009", f"entry '{entry}' does not cite {', '.join(add)}; run `dossier link`")

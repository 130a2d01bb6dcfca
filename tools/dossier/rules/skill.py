"""Skill rules (K): SKILL.md against the Agent Skills rules."""

from __future__ import annotations

import re

from ..yamlio import YamlError, parse_yaml

from .base import Finding, rule

SKILL = "SKILL.md"
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _read_skill(ctx):
    path = ctx.root / SKILL
    if not path.exists():
        return None, None, "SKILL.md is missing"
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, None, f"SKILL.md is not UTF-8 (byte {exc.start})"
    if not text.startswith("---\n"):
        return text, None, "SKILL.md has no YAML frontmatter"
    end = text.find("\n---", 4)
    if end < 0:
        return text, None, "SKILL.md frontmatter has no closing '---'"
    try:
        meta = parse_yaml(text[4:end], SKILL, first_line=2)
    except YamlError as exc:
        return text, None, f"SKILL.md frontmatter is not valid YAML: {exc.problem}"
    if not isinstance(meta, dict):
        return text, None, "SKILL.md frontmatter is not a mapping"
    return text, meta, None


@rule("K001", "skill-frontmatter", scope="project")
def skill_frontmatter(ctx):
    """SKILL.md is missing or its frontmatter is not a YAML mapping."""
    if ctx.card_paths is not None:
        return
    _, _, error = _read_skill(ctx)
    if error:
        yield Finding(SKILL, 1, 1, "K001", error)


@rule("K002", "skill-name", scope="project")
def skill_name(ctx):
    """SKILL.md `name` is not lowercase-hyphen form of 1-64 characters.

    The folder a harness installs the skill into must carry the same name (see README).
    """
    if ctx.card_paths is not None:
        return
    _, meta, _ = _read_skill(ctx)
    if meta is None:
        return
    name = meta.get("name")
    if not isinstance(name, str) or not (1 <= len(name) <= 64) or not _NAME.match(name):
        yield Finding(SKILL, 2, 1, "K002", f"name {name!r} must be lowercase letters, digits and single hyphens, 1-64 characters")


@rule("K003", "skill-description", scope="project")
def skill_description(ctx):
    """SKILL.md `description` is missing, empty or longer than 1,024 characters."""
    if ctx.card_paths is not None:
        return
    _, meta, _ = _read_skill(ctx)
    if meta is None:
        return
    desc = meta.get("description")
    if not isinstance(desc, str) or not desc.strip():
        yield Finding(SKILL, 1, 1, "K003", "description is missing")
    elif len(desc) > 1024:
        yield Finding(SKILL, 1, 1, "K003", f"description has {len(desc)} characters (max 1024)")


@rule("K004", "skill-length", scope="project")
def skill_length(ctx):
    """SKILL.md is 500 lines or longer; move detail into references/."""
    if ctx.card_paths is not None:
        return
    text, _, _ = _read_skill(ctx)
    if text is not None and text.count("\n") >= 500:
        yield Finding(SKILL, 500, 1, "K004", f"SKILL.md has {text.count(chr(10))} lines (max 499)")


@rule("K005", "skill-link", scope="project")
def skill_link(ctx):
    """A relative link in SKILL.md does not resolve.

    Skills link their references directly from SKILL.md (one level deep), so a broken
    link leaves the assistant without the card or page it was told to read.
    """
    if ctx.card_paths is not None:
        return
    text, _, _ = _read_skill(ctx)
    if text is None:
        return
    for number, line in enumerate(text.split("\n"), start=1):
        for m in _LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            path = (ctx.root / target)
            if not path.exists():
                yield Finding(SKILL, number, m.start(1) + 1, "K005", f"link target {target} does not exist")


_CODE_PATH = re.compile(r"`((?:python|sglang_omni|test|docs|benchmark)/[\w./-]+\.\w+)`")


@rule("K006", "skill-unknown-file", scope="project")
def skill_unknown_file(ctx):
    """SKILL.md names an upstream file that no lock or stored tree listing knows.

    The skill sends the assistant to files; a path that drifted upstream (renamed, moved,
    deleted) sends it nowhere. Refresh `references/trees/` or fix the path.
    """
    if ctx.card_paths is not None:
        return
    text, _, _ = _read_skill(ctx)
    if text is None:
        return
    known = set().union(*ctx.known_files.values()) if ctx.known_files else set()
    if not known:
        return
    for number, line in enumerate(text.split("\n"), start=1):
        for m in _CODE_PATH.finditer(line):
            if m.group(1) not in known:
                yield Finding(SKILL, number, m.start(1) + 1, "K006", f"{m.group(1)} is not in any tree listing or lock")


@rule("K007", "skill-not-in-release", scope="project")
def skill_not_in_release(ctx):
    """SKILL.md names an sglang or sglang-omni flag, env var or file the newest release lacks, without saying so.

    The same check as L016 for the skill: a line that names something
    `references/trees/<repo>-release.json` does not list must name the release version
    too ("not in 0.5.23", "gone in 0.1.9"), so an assistant does not send a user of the wheel to it.
    """
    from ..trees import missing_in_release

    if ctx.card_paths is not None:
        return
    text, _, _ = _read_skill(ctx)
    if text is None:
        return
    pinned = ctx.pinned_names
    for repo, release in ctx.releases.items():
        if not release:
            continue
        for number, line in enumerate(text.split("\n"), start=1):
            gone = missing_in_release(release, line, pinned)
            if gone and release["version"] not in line:
                yield Finding(SKILL, number, 1, "K007", f"{', '.join(gone)} is not in {repo} {release['version']}; say so")


@rule("K008", "skill-as-of", scope="project")
def skill_as_of(ctx):
    """SKILL.md does not state the upstream SHAs the knowledge base is current to.

    Each pinned repo in dossier.toml (`pinned`, `pinned_date`) must appear in SKILL.md
    by its first 12 hex characters and its date, so an assistant knows how fresh the
    files, cards and playbook are.
    """
    if ctx.card_paths is not None:
        return
    text, _, _ = _read_skill(ctx)
    if text is None:
        return
    for name, repo in ctx.config.repos.items():
        if repo.pinned and (repo.pinned[:12] not in text or (repo.pinned_date and repo.pinned_date not in text)):
            yield Finding(SKILL, 1, 1, "K008", f"SKILL.md must state that {name} is current to {repo.as_of}")

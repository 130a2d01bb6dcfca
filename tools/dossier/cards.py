"""Cards: Markdown with YAML frontmatter, parsed into sections with line numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from .yamlio import YamlError, parse_yaml

REQUIRED_SECTIONS = ("Motivation", "Key implementation", "Key code excerpts", "Reviewed files", "Validation")
FILE_GROUPS = ("Runtime", "Tests", "Docs", "CI", "Other")
KINDS = ("perf", "feature", "new-model", "bugfix", "hardware", "docs", "refactor", "revert", "ci", "test")
STATES = ("merged", "open", "closed")
LIST_KEYS = ("families", "lanes", "symptoms")  # lists of names: nothing nested
REQUIRED_KEYS = {
    "repo": str, "pr": int, "title": str, "state": str, "url": str,
    "families": list, "kind": str, "lanes": list,
}

# Far above any real card (the largest is ~10 KB, its frontmatter under 1 KB), low enough that a
# pasted log or generated blob cannot cost seconds and gigabytes in every command.
MAX_CARD_BYTES = 256 * 1024
MAX_FRONTMATTER_BYTES = 16 * 1024

_HEADING = re.compile(r"^(#{2,3})\s+(.*?)\s*$")
# The hunk may carry git's function context after the closing @@, as `dossier new` lists it.
_EXCERPT_HEAD = re.compile(r"^###\s+`([^`]+)`(?:\s+`(@@[^`@]*@@)[^`]*`)?\s*$")
_BULLET_PATH = re.compile(r"^\s*[-*]\s+`([^`]+)`")
_BULLET = re.compile(r"^\s*[-*]\s+\S")
# A test named the way pytest names it: `path/to/test_x.py::TestCase::test_name`.
TEST_REF = re.compile(r"`([\w./-]+\.py)::([A-Za-z_][\w]*(?:::[A-Za-z_][\w]*)?)`")
# A fence line: indent, the fence itself (``` or ~~~, as CommonMark has it), the info string.
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)(.*)$")


def is_fence(line: str) -> bool:
    """Whether the line opens or closes a fenced code block (``` or ~~~, as CommonMark has it).

    The one fence test: card parsing, prose rules and the site must agree on what is code.
    Equal to `FENCE.match(line)` (its tail always matches, and `str.lstrip` strips what
    the regex's whitespace class matches), without a regex call on every line of every card.
    """
    return line.lstrip().startswith(_FENCE_OPENERS)


_FENCE_OPENERS = ("```", "~~~")


# A sentence ends at . ! or ? before whitespace and a capital, a backtick or a bracket, so
# "Qwen2.5-VL" and "e.g. the lane" stay whole (the Validation rules read sentences this way).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\[])")

@dataclass
class Excerpt:
    path: str
    hunk: str | None
    line: int  # line of the ### heading
    lines: list[tuple[int, str]] = field(default_factory=list)  # (line number, text)


@dataclass
class Section:
    name: str
    line: int
    body: list[tuple[int, str]] = field(default_factory=list)
    _prose: str | None = field(default=None, repr=False, compare=False)
    _joined: str | None = field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        return self.joined.strip()

    @property
    def joined(self) -> str:
        """The body lines joined by newlines, unstripped: built once for every rule that reads
        the section whole (its prose, `Card.body_text`, `Card.bodies_text`)."""
        if self._joined is None:
            self._joined = "\n".join([t for _, t in self.body])
        return self._joined

    def prose(self) -> str:
        """Body without fenced code blocks and headings (computed once: several rules read it)."""
        if self._prose is None:
            text = self.joined
            # Most sections have no fence and no heading line: then the prose is every line.
            if "```" in text or "~~~" in text or text.startswith("#") or "\n#" in text:
                out, fenced = [], False
                for _, t in self.body:
                    if is_fence(t):
                        fenced = not fenced
                        continue
                    if not fenced and not t.startswith("#"):
                        out.append(t)
                text = "\n".join(out)
            self._prose = (_COMMENT.sub(" ", text) if "<!--" in text else text).strip()
        return self._prose


_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass
class Card:
    path: Path
    text: str
    meta: dict | None
    meta_error: str | None
    meta_lines: dict[str, int]
    body_start: int
    sections: dict[str, Section]
    excerpts: list[Excerpt]
    reviewed: dict[str, list[tuple[int, str]]]
    # Reviewed-files bullets outside a role subsection or without a backticked path.
    reviewed_strays: list[tuple[int, str]] = field(default_factory=list)
    # Joined section texts the rules ask for, by key (see body_text), built on first use.
    _joined: dict = field(default_factory=dict, repr=False, compare=False)

    def test_refs(self, *sections: str) -> list[tuple[int, int, str, str]]:
        """(line, col, path, name) of every `file.py::name` test reference in these sections."""
        out = []
        for name in sections or tuple(self.sections):
            sec = self.sections.get(name)
            for number, text in sec.body if sec else []:
                if ".py::" not in text:  # what TEST_REF needs; most lines lack it, and `in` is cheap
                    continue
                for m in TEST_REF.finditer(text):
                    out.append((number, m.start() + 1, m.group(1), m.group(2)))
        return out

    def key_line(self, key: str) -> int:
        return self.meta_lines.get(key, 2)

    def field_problems(self):
        """(line, message, wrong_type) for each required frontmatter field that is missing
        or of the wrong type (S002's findings; `readable` stops on those with wrong_type)."""
        meta = self.meta
        if meta is None:
            return
        for key, typ in REQUIRED_KEYS.items():
            if key not in meta:
                yield 1, f"frontmatter field '{key}' is missing", False
            elif not isinstance(meta[key], typ) or isinstance(meta[key], bool):
                yield (self.key_line(key), f"frontmatter field '{key}' must be {typ.__name__}, "
                       f"got {type(meta[key]).__name__}", True)
        if "symptoms" in meta and not isinstance(meta["symptoms"], list):
            yield (self.key_line("symptoms"), "frontmatter field 'symptoms' must be list, "
                   f"got {type(meta['symptoms']).__name__}", True)
        for key in LIST_KEYS:
            value = meta.get(key)
            if isinstance(value, list) and not all(isinstance(v, str) for v in value):
                yield self.key_line(key), f"frontmatter field '{key}' must be a list of names (strings)", True
        if meta.get("state") == "merged" and not meta.get("merged"):
            yield self.key_line("state"), "state is merged but 'merged' date is missing", False

    @cached_property
    def cid(self) -> str:
        """`repo/pr`, the id playbook entries and supersession use (several rules ask, and
        each `path.parent` is a new Path)."""
        return f"{self.path.parent.name}/{self.path.stem}"

    # Text the per-card rules derive from the card, computed once: a dozen rules read each
    # card in turn, and each rebuilding these cost more than its own test.

    @cached_property
    def text_lower(self) -> str:
        """`text.lower()`, for substring pre-checks ahead of case-insensitive patterns."""
        return self.text.lower()

    def body_text(self, name: str) -> str | None:
        """The section's body lines joined by newlines (`Section.text` before its strip), None without it."""
        joined = self._joined
        if name not in joined:
            sec = self.sections.get(name)
            joined[name] = None if sec is None else sec.joined
        return joined[name]

    def bodies_text(self, names: tuple[str, ...]) -> str:
        """Every body line of these sections, in this order, joined by newlines (the lines a rule
        reading them one by one sees: a missing or empty section adds none)."""
        joined = self._joined
        if names not in joined:
            # Each section's joined lines, joined again: a section without lines adds none.
            joined[names] = "\n".join([sec.joined for name in names if (sec := self.sections.get(name)) and sec.body])
        return joined[names]

    def bodies_lower(self, names: tuple[str, ...]) -> str:
        """`bodies_text(names).lower()`, computed once."""
        key = ("lower", names)
        joined = self._joined
        if key not in joined:
            joined[key] = self.bodies_text(names).lower()
        return joined[key]


_META_KEY = re.compile(r"^([A-Za-z_][\w-]*):")


def _meta_key_lines(lines: list[str]) -> dict[str, int]:
    out = {}
    for i, line in enumerate(lines, start=2):
        m = _META_KEY.match(line)
        if m:
            out[m.group(1)] = i
    return out


def parse_card(path: Path, text: str) -> Card:
    lines = text.split("\n")
    meta, meta_error, meta_lines, body_start = None, None, {}, 1
    if text.startswith("\ufeff"):
        meta_error = "the file starts with a byte-order mark (U+FEFF); save it as UTF-8 without one"
    elif lines and lines[0].strip() == "---":
        try:
            end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        except StopIteration:
            meta_error = "frontmatter has no closing '---'"
        else:
            raw = "\n".join(lines[1:end])
            meta_lines = _meta_key_lines(lines[1:end])
            body_start = end + 2
            try:
                if len(raw.encode()) > MAX_FRONTMATTER_BYTES:
                    raise YamlError(str(path), 2, 1, f"{len(raw.encode()):,} bytes; the cap is {MAX_FRONTMATTER_BYTES:,}")
                meta = parse_yaml(raw, str(path), first_line=2)
            except YamlError as exc:
                meta_error = f"frontmatter is not valid YAML (line {exc.line}): {exc.problem}"
            else:
                if not isinstance(meta, dict):
                    meta_error, meta = "frontmatter is not a mapping", None
    else:
        meta_error = "no YAML frontmatter (file must start with '---')"

    sections: dict[str, Section] = {}
    excerpts: list[Excerpt] = []
    reviewed: dict[str, list[tuple[int, str]]] = {}
    strays: list[tuple[int, str]] = []
    current: Section | None = None
    group: str | None = None
    excerpt: Excerpt | None = None
    fenced = False
    for number in range(body_start, len(lines) + 1):
        line = lines[number - 1]
        if is_fence(line):
            fenced = not fenced
            if current:
                current.body.append((number, line))
            continue
        # _HEADING needs "##" first, _EXCERPT_HEAD "###": most lines skip both regexes.
        m = None if fenced or not line.startswith("##") else _HEADING.match(line)
        if m and len(m.group(1)) == 2:
            current = Section(m.group(2), number)
            sections.setdefault(current.name, current)
            group = excerpt = None
            continue
        if current is None:
            continue
        current.body.append((number, line))
        if current.name == "Key code excerpts":
            em = None if fenced or m is None else _EXCERPT_HEAD.match(line)
            if em:
                excerpt = Excerpt(em.group(1), em.group(2), number)
                excerpts.append(excerpt)
            elif fenced and excerpt is not None:
                excerpt.lines.append((number, line))
        elif current.name == "Reviewed files" and not fenced:
            if m and len(m.group(1)) == 3:
                group = m.group(2)
                reviewed.setdefault(group, [])
                if group not in FILE_GROUPS:
                    strays.append((number, f"subsection '### {group}' is not a role: use one of {', '.join(FILE_GROUPS)}"))
            elif line.lstrip()[:1] in ("-", "*") and _BULLET.match(line):
                bm = _BULLET_PATH.match(line)
                if group is None:
                    strays.append((number, "bullet outside a role subsection (### Runtime, ### Tests, ...)"))
                elif bm is None:
                    strays.append((number, "bullet does not start with a backticked path"))
                else:
                    reviewed[group].append((number, bm.group(1)))
    return Card(path, text, meta, meta_error, meta_lines, body_start, sections, excerpts, reviewed, strays)


_CI_DIRS = (".github/", ".ci/", "scripts/ci", "ci/")
_CI_CONFIG = ("requirements.txt", "pyproject.toml", ".yaml", ".yml")
_CI_FILES = ("run_suite.py", "ci_install_dependency.sh")
_DOCS_DIRS = ("docs/", "docs_new/")
_DOCS_EXTS = (".md", ".mdx", ".rst")
_OTHER_DIRS = (".claude/", "examples/", "example/")
_TESTS_DIRS = ("test/", "tests/")


def classify_file(path: str) -> str:
    """The role a changed file plays (one of FILE_GROUPS); earlier checks win ties."""
    low = path.lower()
    name = low.rsplit("/", 1)[-1]
    if low.startswith(_CI_DIRS) or "/ci/" in low:
        return "CI"
    if ".github" in low and low.endswith(_CI_CONFIG):  # a nested .github folder's config
        return "CI"
    if low.startswith(_DOCS_DIRS) or low.endswith(_DOCS_EXTS):
        return "Docs"
    if name in _CI_FILES:
        return "CI"
    if low.startswith(_OTHER_DIRS) or ("/" not in low and not low.endswith(".py")):
        return "Other"  # agent skills, example scripts, root-level config: not the serving code
    if (low.startswith(_TESTS_DIRS) or "/tests/" in low or name.startswith("test_") or name.endswith("_test.py")
            or "benchmark" in low):
        return "Tests"
    return "Runtime"

"""Markdown rewriting: knowledge-base text re-linked for its page on the site.

Cards and generated references are written for the repository layout; on the
site each page sits elsewhere, so relative links, `#1234` PR numbers and excerpt
headings are rewritten here. Fenced code is never touched.
"""

from __future__ import annotations

import hashlib
import html
import posixpath
import re
from typing import Callable

import yaml

from ..cards import FENCE, is_fence

_LINK = re.compile(r"(!?\[[^\]\n]*\])\(([^)\s]+)((?:\s+\"[^\"]*\")?)\)")
_CODE_OR_LINK = re.compile(r"(`[^`\n]*`|!?\[[^\]\n]*\]\([^)\n]*\)|<[^>\n]*>)")
_PR_NUMBER = re.compile(r"(?<![\w/#&])#(\d{1,6})\b")
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_ABSOLUTE = re.compile(r"^[a-z][a-z0-9+.-]*:|^#|^/")
_EXCERPT_HEAD = re.compile(r"^(###\s+`([^`]+)`.*)$", re.M)


def slug(text: str) -> str:
    return _SLUG.sub("-", str(text)).strip("-") or "entry"


def cell(value) -> str:
    """One Markdown table cell: no pipes or newlines."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def relative(from_page: str, to_page: str) -> str:
    """Link from one site page (docs-relative .md path) to another."""
    return posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")


def frontmatter(title: str) -> str:
    """A page's frontmatter. The theme puts the title into <title> and the navigation as it is,
    so it is HTML-escaped here: a PR title is text from outside."""
    return "---\n" + yaml.safe_dump({"title": html.escape(str(title), quote=False)}, allow_unicode=True, width=1000) + "---\n\n"


def rewrite_links(text: str, source: str, page: str, site_path: Callable[[str], str | None]) -> str:
    """Re-point relative links of a knowledge-base file (`source`) for its site page.

    `site_path` maps a repository path to its page, or None when it has none; such a
    link becomes plain text, so `mkdocs build --strict` never fails on content written
    for the repository layout.
    """

    def fix(m: re.Match) -> str:
        label, target, title = m.groups()
        if _ABSOLUTE.match(target):
            return m.group(0)
        path, _, anchor = target.partition("#")
        dest = site_path(posixpath.join(posixpath.dirname(source), path))
        if dest is None:
            return label[1:-1] if not label.startswith("!") else ""
        return f"{label}({relative(page, dest)}{'#' + anchor if anchor else ''}{title})"

    return outside_code(text, lambda chunk: _LINK.sub(fix, chunk))


def link_pr_numbers(text: str, page: str, card_page: Callable[[str], str | None],
                    pr_url: Callable[[int], str] | None) -> str:
    """`#1234` in prose links its card when `card_page` names one, else the upstream PR."""

    def link(m: re.Match) -> str:
        number = m.group(1)
        dest = card_page(number)
        if dest is not None:
            return f"[#{number}]({relative(page, dest)})"
        return f"[#{number}]({pr_url(int(number))})" if pr_url else m.group(0)

    def prose(chunk: str) -> str:
        parts = _CODE_OR_LINK.split(chunk)  # odd items are code spans and links: leave them
        return "".join(p if i % 2 else _PR_NUMBER.sub(link, p) for i, p in enumerate(parts))

    return outside_code(text, prose)


def diff_fences(body: str) -> str:
    """Fences under "Key code excerpts" become ```diff blocks, whatever the card wrote."""
    out, section, fenced = [], "", False
    for line in body.split("\n"):
        m = FENCE.match(line)
        if m:
            if not fenced and section == "Key code excerpts":
                line = f"{m.group(1)}{m.group(2)}diff"
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            section = line[3:].strip()
        out.append(line)
    return "\n".join(out)


def link_excerpt_heads(body: str, url: str) -> str:
    """Each excerpt heading gets a link to that file in the upstream PR's diff view."""
    if not url:
        return body

    def add(m: re.Match) -> str:
        anchor = hashlib.sha256(m.group(2).encode()).hexdigest()
        return f"{m.group(0)}\n\n[view in the PR]({url}/files#diff-{anchor})"

    return outside_code(body, lambda chunk: _EXCERPT_HEAD.sub(add, chunk))


def outside_code(text: str, func: Callable[[str], str]) -> str:
    """Apply func to the parts of Markdown outside fenced code blocks."""
    out, chunk, fenced = [], [], False
    for line in text.split("\n"):
        if is_fence(line):
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

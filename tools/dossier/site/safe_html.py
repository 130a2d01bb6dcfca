"""A Python-Markdown extension that keeps text from outside as text: no raw HTML, no script links.

Card bodies, frontmatter and PR titles come from upstream and from contributors;
the site is published. So every page is rendered with raw HTML off (a `<script>`
in a card shows as the characters `<script>`), and a last pass over the element
tree keeps only an allow-list of attributes and only link targets that are
relative or http(s)/mailto: `javascript:`, `data:`, `vbscript:` and other schemes
are dropped, as are `on*` handlers and the other attributes `attr_list` would let a
card set. HTML comments at the start of a line (measured-block markers, build
stamps) are dropped rather than shown.

mkdocs.yml loads it as `dossier.site.safe_html`; the hook refuses to build without it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree

from markdown import Extension
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor

# What Markdown and the enabled extensions produce; anything else a card could add through attr_list.
_ATTRIBUTES = {"id", "class", "href", "src", "alt", "title", "style", "colspan", "rowspan", "open", "width",
               "height", "lang", "dir", "start", "type", "align"}
_URL_ATTRIBUTES = {"href", "src"}
_SAFE_SCHEMES = {"http", "https", "mailto"}
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
# Browsers ignore these inside a scheme (`java\tscript:`), so they are removed before the test.
_IGNORED_IN_URL = re.compile(r"[\x00-\x20\x7f]+")
_TABLE_ALIGN = re.compile(r"^text-align: (left|right|center);?$")
_COMMENT_LINE = re.compile(r"^[ ]{0,3}<!--.*?-->[ \t]*$", re.M | re.S)


def safe_url(url: str) -> bool:
    """Whether a link target is relative, a fragment, or uses an allowed scheme."""
    cleaned = _IGNORED_IN_URL.sub("", url or "")
    m = _SCHEME.match(cleaned)
    return m is None or m.group(1).lower() in _SAFE_SCHEMES


class _DropComments(Preprocessor):
    """HTML comments on their own lines vanish (fenced code is stashed before this runs)."""

    def run(self, lines):
        return _COMMENT_LINE.sub("", "\n".join(lines)).split("\n")


class _Sanitise(Treeprocessor):
    """Allow-listed attributes only; unsafe link targets removed (the link text stays)."""

    def run(self, root: etree.Element):
        for el in root.iter():
            target = "href" if el.tag == "a" else "src" if el.tag == "img" else None
            if target and not safe_url(el.get(target) or ""):
                # A link or image to a script becomes its plain text (mkdocs wants every <a> to have a target).
                if el.tag == "img":
                    el.text = el.get("alt", "")
                el.tag = "span"
                el.attrib.clear()
            for name in list(el.attrib):
                value = el.attrib[name]
                low = name.lower()
                if (low not in _ATTRIBUTES or (low in _URL_ATTRIBUTES and not safe_url(value))
                        or (low == "style" and not _TABLE_ALIGN.match(value.strip()))):
                    del el.attrib[name]
        return None


class SafeHtmlExtension(Extension):
    def extendMarkdown(self, md):  # noqa: N802 - Python-Markdown's name
        for registry, name in ((md.preprocessors, "html_block"), (md.inlinePatterns, "html")):
            if name in registry:
                registry.deregister(name)
        md.preprocessors.register(_DropComments(md), "dossier_drop_comments", 20)
        # After attr_list (8) has set what a card asked for, before toc (5) copies headings.
        md.treeprocessors.register(_Sanitise(md), "dossier_sanitise", 6)


def makeExtension(**kwargs):  # noqa: N802 - Python-Markdown's entry point
    return SafeHtmlExtension(**kwargs)

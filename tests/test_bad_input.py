"""Bad input and faults, one test per try (issue 21): nothing from outside runs on the site,
nothing broken is dropped silently, every bad input is one line and a non-zero exit."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from site_harness import CARD, build_site, make_site_kb

# ---- 1. the site shows text from outside as text ---------------------------------------------

XSS_TITLE = "<script>alert(1)</script><img src=x onerror=alert(1)>"
XSS_BODY = """
<script>alert(2)</script>

[click](javascript:alert(3)) [d](data:text/html;base64,PHNjcmlwdD4=) <a href="javascript:alert(4)">x</a>
![i](javascript:alert(5)) [y](#){onclick="alert(6)"} <img src=x onerror=alert(7)> <javascript:alert(9)>
[tab](java\tscript:alert(12)) [ok](https://example.org/fine)

<iframe src="https://example.org"></iframe>

## Heading {data-toc-label="<b onmouseover=alert(13)>x</b>"}

<!-- a comment the page does not show -->
"""


class _Live(HTMLParser):
    """Collects what a browser would run: scripts with our payload, handlers, script URLs, embeds."""

    def __init__(self):
        super().__init__()
        self.found, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        if tag in ("iframe", "object", "embed"):
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{tag} {name}={value}")
            if name in ("href", "src") and re.match(r"\s*(javascript|data|vbscript):", (value or "").replace("\t", ""), re.I):
                self.found.append(f"{tag} {name}={value}")

    def handle_data(self, data):
        if self._in_script and "alert(" in data:
            self.found.append(f"<script>{data[:40]}")

    def handle_endtag(self, tag):
        self._in_script = False


def live_html(page: str) -> list[str]:
    parser = _Live()
    parser.feed(page)
    return parser.found


def test_xss_payloads_in_titles_frontmatter_and_bodies_never_run(tmp_path):
    root = make_site_kb(tmp_path / "kb")
    card = root / "references" / "cards" / "sglang" / "101.md"
    text = CARD.replace('title: "Fuse window attention in the Qwen2.5-VL vision tower"',
                        f"title: {json.dumps(XSS_TITLE)}\nnote: \"<script>alert(8)</script>\"\n"
                        'url: "javascript:alert(14)"')
    text = text.replace("url: https://github.com/sgl-project/sglang/pull/101\n", "")
    text = text.replace("# Fuse window attention", "# <img src=x onerror=alert(11)> Fuse window attention")
    card.write_text(text.replace("## Motivation\n", "## Motivation\n" + XSS_BODY), encoding="utf-8")
    lock = root / "references" / "evidence" / "sglang" / "101.json"
    data = json.loads(lock.read_text(encoding="utf-8"))
    data["title"] = "<script>alert(10)</script>"
    lock.write_text(json.dumps(data), encoding="utf-8")
    res = build_site(root, tmp_path / "site")
    assert res.returncode == 0, res.stderr[-3000:]
    pages = sorted((tmp_path / "site").rglob("*.html"))
    live = {str(p.relative_to(tmp_path / "site")): live_html(p.read_text(encoding="utf-8")) for p in pages}
    assert not {k: v for k, v in live.items() if v}, "live HTML from a card or title"
    page = (tmp_path / "site" / "cards" / "sglang" / "101.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, "the title is shown, as text"
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page, "a body <script> is shown, as text"
    assert '<a href="https://example.org/fine">ok</a>' in page, "safe links stay links"
    assert "a comment the page does not show" not in page
    index = (tmp_path / "site" / "search" / "search_index.json").read_text(encoding="utf-8")
    assert not re.search(r"<(script|img|iframe|b)\b", index), "the search index carries markup from the card"


def test_site_refuses_to_build_without_the_safe_html_extension(tmp_path):
    root = make_site_kb(tmp_path / "kb")
    conf = root / "mkdocs.yml"
    conf.write_text(conf.read_text(encoding="utf-8").replace("  - dossier.site.safe_html", ""), encoding="utf-8")
    res = build_site(root, tmp_path / "site")
    assert res.returncode != 0 and "dossier.site.safe_html" in res.stderr

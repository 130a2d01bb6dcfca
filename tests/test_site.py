"""The mkdocs site builds with --strict and has a page for every card, family, entry, lane and rule."""

from __future__ import annotations

import html
import posixpath
import re
import shutil
from pathlib import Path

import pytest
import yaml

from dossier import radar
from dossier.config import load_config
from dossier.kb import KnowledgeBase
from dossier.playbook import load as load_playbook
from dossier.rules import RULES
from dossier.site import Site, slug
from dossier.site.check_pages import output_page
from dossier.site.markdown import link_pr_numbers, rewrite_links

from site_harness import ROOT, build_site, make_site_kb


def text_of(page: str) -> str:
    """Visible text of an HTML page (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def expected_pages(root: Path) -> set[str]:
    """Every page the site must have, computed from the sources."""
    config = load_config(root)
    ctx = KnowledgeBase(config)
    pages = {"index.html", "cards/index.html", "families/index.html", "playbook/index.html",
             "lanes/index.html", "check/index.html", "check/rules/index.html"}
    pages |= {f"cards/{p.parent.name}/{p.stem}.html" for p in ctx.all_card_paths()}
    pages |= {f"families/{slug(name)}.html" for name in config.families}
    pages |= {f"playbook/{slug(e['id'])}.html" for e in load_playbook(root).entries if "id" in e}
    pages |= {f"lanes/{slug(lane)}.html" for lane in ctx.lanes}
    pages |= {f"check/rules/{code}.html" for code in RULES}
    if (root / "references" / "radar.yaml").exists() or (root / "references" / "radar.md").exists():
        pages.add("radar.html")
    return pages


@pytest.fixture(scope="module")
def real_site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    res = build_site(ROOT, out)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def real_expected() -> set[str]:
    """Counted before the build, so content added while it runs cannot fail the test."""
    return expected_pages(ROOT)


def test_real_site_has_a_page_for_everything(real_expected, real_site):
    missing = sorted(p for p in real_expected if not (real_site / p).is_file())
    assert not missing, f"pages missing from the site: {missing}"
    assert (real_site / "search" / "search_index.js").is_file(), "offline search index missing"


def test_real_home_counts_come_from_the_tree(real_expected, real_site):
    home = (real_site / "index.html").read_text(encoding="utf-8")
    n_cards = sum(1 for p in real_expected if p.startswith("cards/") and p.count("/") == 2)
    assert f'<a href="cards/index.html">Cards</a></td>\n<td style="text-align: right;">{n_cards}</td>' in home


def test_rule_pages_carry_the_registry_text(real_site):
    for code, r in RULES.items():
        html = (real_site / "check" / "rules" / f"{code}.html").read_text(encoding="utf-8")
        assert r.name in html and r.family in html
    check = text_of((real_site / "check" / "index.html").read_text(encoding="utf-8"))
    for needle in ("::error file=references/cards/sglang/16366.md,line=42", '"code": "G001"',
                   "references/cards/sglang/16366.md:42:1: G001", "Tool error"):
        assert needle in check


def test_tiny_site_pages(tiny_site):
    root, out = tiny_site
    missing = sorted(p for p in expected_pages(root) if not (out / p).is_file())
    assert not missing
    assert "cards/sglang/101.html" in expected_pages(root)
    assert not (root / "docs" / "cards").exists(), "pages must be generated at build time, not written to docs/"
    home = (out / "index.html").read_text(encoding="utf-8")
    assert 'data-md-color-scheme="default"' in home and 'data-md-color-scheme="slate"' in home, "light/dark toggle"


def test_broken_cards_still_get_a_page_and_the_build_stays_strict(tiny_site):
    _, out = tiny_site  # built with --strict, cards 7 and 8 broken
    for pr in (7, 8, 101):
        assert (out / "cards" / "sglang" / f"{pr}.html").is_file()
    index = (out / "cards" / "index.html").read_text(encoding="utf-8")
    assert index.count("(no evidence lock)") == 2


def test_card_page_facts_diff_and_backlinks(tiny_site):
    _, out = tiny_site
    html = (out / "cards" / "sglang" / "101.html").read_text(encoding="utf-8")
    assert "repo: sglang" not in html, "frontmatter must be shown as a table, not raw"
    assert '<a href="https://github.com/sgl-project/sglang/pull/101">sglang#101</a>' in html
    assert 'class="language-diff highlight"' in html and 'class="gi"' in html and 'class="gd"' in html
    assert 'href="../../playbook/slow-vit.html"' in html, "backlink to the citing playbook entry"
    assert 'href="../../lanes/vl-single-image.html"' in html, "link to the lane the card names"
    assert 'href="../../families/qwen2.5-vl.html"' in html
    assert 'href="../../playbook/index.html"' in html, "card link to references/playbook.md re-pointed"
    assert "nowhere.md" not in html and "a missing file" in html, "unknown link kept as text"
    assert "pull/101/files#diff-" in html
    assert "fused_window_attention" in html
    assert '<a href="https://github.com/sgl-project/sglang/pull/99">#99</a>' in html, "PR numbers link upstream"
    assert '<a href="101.html">#101</a>' in html, "PR numbers with a card link the card"


def test_family_lane_and_entry_pages_link_the_card(tiny_site):
    root, out = tiny_site
    family = (out / "families" / "qwen2.5-vl.html").read_text(encoding="utf-8")
    assert 'href="../cards/sglang/101.html"' in family
    assert "python/sglang/srt/models/qwen2_5_vl.py" in family
    empty = (out / "families" / "qwen3-asr.html").read_text(encoding="utf-8")
    assert "No cards yet." in empty
    lane = (out / "lanes" / "vl-single-image.html").read_text(encoding="utf-8")
    lane_text = text_of(lane)
    assert "dossier lanes run vl-single-image -- --dry-run" in lane_text
    registry = yaml.safe_load((root / "playbook" / "lanes.yaml").read_text(encoding="utf-8"))["lanes"]
    spec = next(l for l in registry if l["id"] == "vl-single-image")
    direct = " ".join(["python", spec["script"], *spec.get("args", []), *(["--model", spec["model"]] if spec.get("model") else [])])
    assert f"{direct} --dry-run" in lane_text
    assert 'href="../cards/sglang/101.html"' in lane and 'href="../playbook/slow-vit.html"' in lane
    entry = (out / "playbook" / "slow-vit.html").read_text(encoding="utf-8")
    assert 'href="../cards/sglang/101.html"' in entry and "--mm-attention-backend fa3" in text_of(entry)
    home = (out / "index.html").read_text(encoding="utf-8")
    assert '<a href="playbook/index.html">Playbook entries</a></td>\n<td style="text-align: right;">1</td>' in home


def test_site_handles_an_empty_playbook_and_no_cards(tmp_path):
    root = make_site_kb(tmp_path / "kb")
    shutil.rmtree(root / "references" / "cards")
    (root / "playbook" / "symptoms.yaml").unlink()
    site = Site(load_config(root))
    pages = site.render()
    assert not [p for p in pages if p.startswith("cards/sglang/")]
    assert "No playbook entries yet." in pages["playbook/index.md"]
    res = build_site(root, tmp_path / "site")
    assert res.returncode == 0, res.stderr[-3000:]


def test_playbook_page_is_the_generated_playbook_with_site_links(tmp_path):
    root = make_site_kb(tmp_path / "kb")
    site = Site(load_config(root))
    page = site.render()["playbook/index.md"]
    generated = site.refs.generated["references/playbook.md"]
    assert "](cards/sglang/101.md)" in generated, "the generated playbook links the card the repository's way"
    assert "](../cards/sglang/101.md)" in page, "the page is that playbook, re-linked for playbook/index.md"
    assert page.count("<!-- dossier-build inputs=") == 1
    assert "[slow-vit](slow-vit.md)" in page, "entries are listed after the playbook text"


def test_a_stored_playbook_file_is_used_when_nothing_generates_one(tmp_path):
    root = make_site_kb(tmp_path / "kb")
    (root / "playbook" / "symptoms.yaml").unlink()
    (root / "references" / "playbook.md").write_text(
        "# Playbook\n\nSee [card 101](cards/sglang/101.md) and [history](pr-history.md).\n", encoding="utf-8")
    page = Site(load_config(root)).render()["playbook/index.md"]
    assert "[card 101](../cards/sglang/101.md)" in page
    assert "[history](../cards/index.md)" in page


def test_radar_page_and_count_come_from_the_radar_file(tmp_path):
    root = make_site_kb(tmp_path / "kb")
    shutil.copy(ROOT / radar.RADAR_FILE, root / radar.RADAR_FILE)
    site = Site(load_config(root))
    pages = site.render()
    assert "radar.md" in pages
    n = len(radar.load(root).items)
    assert f"| [Radar entries](radar.md) | {n} |" in site.coverage()


def test_check_page_shows_the_help_it_is_given_and_omits_the_block_without_it():
    with_help = output_page("Usage: dossier check [OPTIONS] [PATHS]...")
    assert "```text\nUsage: dossier check [OPTIONS] [PATHS]...\n```" in with_help
    without = output_page(None)
    assert "Usage:" not in without and "## Output formats" in without
    assert without.startswith("---\ntitle: dossier check\n---\n\n# `dossier check`\n")


def test_links_are_rewritten_outside_code_only():
    pages = {"references/cards/sglang/101.md": "cards/sglang/101.md", "references/playbook.md": "playbook/index.md"}
    text = ("[pb](../../playbook.md#slow) [gone](../../nowhere.md) ![img](x.png) [web](https://x.org/a.md)\n"
            "```\n[pb](../../playbook.md)\n```\n")
    out = rewrite_links(text, "references/cards/sglang/101.md", "cards/sglang/101.md",
                        lambda path: pages.get(posixpath.normpath(path)))
    first, fenced = out.split("```\n", 1)
    assert first == "[pb](../../playbook/index.md#slow) gone  [web](https://x.org/a.md)\n"
    assert fenced == "[pb](../../playbook.md)\n```\n", "fenced code is left as written"


def test_pr_numbers_link_cards_then_upstream_but_not_in_code():
    def card_page(n):
        return "cards/sglang/101.md" if n == "101" else None

    out = link_pr_numbers("#101 and #99, `#7`, [#8](x.md), a#5", "cards/sglang/5.md", card_page,
                          lambda n: f"https://up/pull/{n}")
    assert out == "[#101](101.md) and [#99](https://up/pull/99), `#7`, [#8](x.md), a#5"
    assert link_pr_numbers("#99", "cards/x/1.md", card_page, None) == "#99", "no registry: left as text"


def test_site_package_imports_no_command_line():
    import ast

    package = ROOT / "tools" / "dossier" / "site"
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            assert not [n for n in names if n.split(".")[0] == "click" or n.endswith("cli")], \
                f"{path.name}:{node.lineno} imports {names}"


def test_every_template_ships_as_package_data():
    import fnmatch

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]["dossier"]
    package = ROOT / "tools" / "dossier"
    templates = sorted(p.relative_to(package).as_posix() for p in (package / "templates").rglob("*.j2"))
    assert "templates/site/card.md.j2" in templates
    unshipped = [t for t in templates if not any(fnmatch.fnmatch(t, g) and t.count("/") == g.count("/") for g in globs)]
    assert not unshipped, f"templates missing from [tool.setuptools.package-data]: {unshipped}"

"""mkdocs hook: add the knowledge base's pages as generated files at build time.

Pages come from the `dossier.site` package, which reads the same cards, locks,
playbook, lanes and rules as the skill and `dossier check`; nothing is written to
git. The check page's `--help` text comes from the command line, here, so the site
package never imports it.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

from dossier.cli import command_help
from dossier.config import find_root, load_config
from dossier.site import build_site

COVERAGE_MARK = "<!-- dossier:coverage -->"
_state: dict = {}


def on_config(config):
    if "dossier.site.safe_html" not in config.markdown_extensions:
        raise PluginError("mkdocs.yml must list the markdown extension dossier.site.safe_html: "
                          "cards and PR titles are text from outside and must not reach the site as HTML")
    root = find_root(Path(config.config_file_path).parent)
    pages, coverage = build_site(load_config(root), check_help=command_help("check"))
    _state.update(pages=pages, coverage=coverage)
    if not config.nav:
        config.nav = _nav(pages)
    return config


def on_files(files, config):
    for path, text in sorted(_state["pages"].items()):
        if files.get_file_from_path(path) is None:
            files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "index.md":
        return markdown.replace(COVERAGE_MARK, _state["coverage"])
    return markdown


def _newest_first(path: str):
    stem = Path(path).stem
    return (0, -int(stem), path) if stem.isdigit() else (1, 0, path)


CARDS_PER_BAND = 40


def _bands(paths: list[str]) -> list:
    """Cards in bands of at most CARDS_PER_BAND ('#35336-#31301'): with navigation.prune a card page
    carries only its own band of the navigation, not every card of the repo."""
    if len(paths) <= CARDS_PER_BAND:
        return paths
    out = []
    for i in range(0, len(paths), CARDS_PER_BAND):
        band = paths[i:i + CARDS_PER_BAND]
        first, last = Path(band[0]).stem, Path(band[-1]).stem
        out.append({f"#{first}-#{last}" if first != last else f"#{first}": band})
    return out


def _nav(pages: dict[str, str]) -> list:
    def under(prefix: str) -> list[str]:
        index = f"{prefix}/index.md"
        rest = sorted(p for p in pages if p.startswith(prefix + "/") and p != index and p.count("/") == prefix.count("/") + 1)
        return [index, *rest]

    cards = ["cards/index.md", {"Card format": "card-format.md"}]
    for repo in sorted({p.split("/")[1] for p in pages if p.startswith("cards/") and p.count("/") == 2}):
        mine = sorted((p for p in pages if p.startswith(f"cards/{repo}/")), key=_newest_first)
        cards.append({repo: _bands(mine)})
    nav = [
        {"Home": "index.md"},
        {"Playbook": under("playbook")},
        {"Families": under("families")},
        {"Cards": cards},
        {"Lanes": under("lanes")},
    ]
    if "radar.md" in pages:
        nav.append({"Radar": "radar.md"})
    if "measurements.md" in pages:
        nav.append({"Measurements": "measurements.md"})
    nav.append({"Check": ["check/index.md", {"Rules": under("check/rules")}]})
    return nav

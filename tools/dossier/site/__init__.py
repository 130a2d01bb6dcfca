"""The mkdocs site: every page rendered at build time from cards, locks, playbook, lanes and rules.

`docs_hooks/dossier_site.py` hands these pages to mkdocs as generated files, so
the site reads exactly what the skill and `dossier check` read and nothing is
copied into git.

- `xref`: the cross-reference graph (cards, entries, lanes, families; who cites whom).
- `markdown`: knowledge-base text re-linked for its page.
- `pages`: the pages, rendered from `templates/site/*.j2`.
- `check_pages`: the pages of `dossier check` and its rules.
"""

from .markdown import slug
from .pages import Site, build_site

__all__ = ["Site", "build_site", "slug"]

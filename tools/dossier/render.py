"""The one jinja2 environment every generated file, scaffold and site page is rendered with.

Built on first use: `dossier check` usually needs no template at all, and jinja2
is a noticeable share of start-up time.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("dossier", "templates"),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters["tick"] = lambda s: f"`{s}`"
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)

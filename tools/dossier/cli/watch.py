"""`dossier watch`: what upstream merged and released since the pins; exit 1 when there is something to do."""

from __future__ import annotations

import json

import click

from ..errors import DossierError
from ._base import config_at, repo_paths, root_option


@click.command("watch")
@click.option("--clone", "clones", multiple=True, metavar="REPO=PATH",
              help="Read REPO's merged PRs from a local clone (repeatable); other repos ask the GitHub API.")
@click.option("--ref", "refs", multiple=True, metavar="[REPO=]REF",
              help="The clones' ref to compare with the pins (default HEAD); REPO=REF for one clone (repeatable).")
@click.option("--api-url", default=None, help="GitHub API root (default: GITHUB_API_URL or api.github.com).")
@click.option("--index-url", default=None, help="Package index root (default: DOSSIER_INDEX_URL or pypi.org).")
@click.option("--skip", multiple=True, type=click.Choice(["prs", "releases", "radar"]), help="Leave a question out.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text for people, json for scripts (the weekly workflow keeps the json report).")
@root_option
def command(clones, refs, api_url, index_url, skip, fmt, root):
    """Report merged PRs on the families' paths with no card or exclusion, newer releases and radar changes."""
    from ..watch import watch

    config = config_at(root)
    by_repo = repo_paths(clones, config, "--clone")
    report = watch(config, by_repo, _refs(refs, config), api_url, index_url, tuple(skip))
    click.echo(json.dumps(report.as_dict(), indent=1) if fmt == "json" else report.text())
    raise SystemExit(1 if report.todo else 0)


def _refs(values, config) -> dict[str, str]:
    """{repo: ref}: a plain `--ref REF` for every clone, `--ref REPO=REF` for one (it wins)."""
    default, per_repo = "HEAD", {}
    for value in values:
        name, sep, ref = value.partition("=")
        if sep and name in config.repos:
            if not ref:
                raise DossierError(f"--ref {value!r}: no ref after '='")
            per_repo[name] = ref
        else:
            default = value
    return {name: per_repo.get(name, default) for name in config.repos}

"""`dossier fetch`: evidence locks from a clone, GitHub or a saved diff."""

from __future__ import annotations

import sys

import click

from ..errors import DossierError
from ._base import config_at, exit_for, pr_numbers, read_bytes, root_option, working


@click.command()
@click.argument("repo")
@click.argument("prs", nargs=-1, required=True)
@click.option("--clone", envvar="DOSSIER_CLONE", show_envvar=True, help="Local git clone (git source).")
@click.option("--ref", default=None, help="Branch or SHA whose first-parent history holds merges "
              "(default: the repo's pinned SHA, else HEAD).")
@click.option("--source", "source_kind", type=click.Choice(["git", "github"]), default=None,
              help="Where to read the PR (default: git when --clone is given, else github, which reads GITHUB_TOKEN from the environment and needs the github extra).")
@click.option("--api-url", default=None, help="GitHub API root (github source).")
@click.option("--max-age", type=float, default=None, envvar="DOSSIER_GITHUB_MAX_AGE",
              help="Seconds cached GitHub metadata (state, labels) stays fresh (github source).")
@click.option("--diff", "diff_file", type=str, default=None, help="Build the lock from a saved diff FILE or '-' (stdin).")
@click.option("--title", default=None, help="PR title (with --diff).")
@click.option("--state", default="merged", type=click.Choice(["merged", "open", "closed"]), help="PR state (with --diff).")
@click.option("--merged", "merged_date", default=None, help="Merge date YYYY-MM-DD (with --diff).")
@click.option("--force", is_flag=True, help="With --diff: replace an existing lock that differs.")
@root_option
def fetch(repo, prs, clone, ref, source_kind, api_url, max_age, diff_file, title, state, merged_date, force, root):
    """Write evidence locks for PRS of REPO (e.g. `dossier fetch sglang 16366 --clone ../sglang`)."""
    from ..fetch import fetch_git, lock_from_diff

    config = config_at(root)
    config.repo(repo)
    numbers = pr_numbers(prs)
    if diff_file is not None:
        if len(numbers) != 1 or not title:
            raise DossierError("--diff takes exactly one PR number and --title")
        data = sys.stdin.buffer.read() if diff_file == "-" else read_bytes(diff_file)
        res = lock_from_diff(config, repo, numbers[0], data, title, state, merged_date, force=force)
        click.echo(f"{'wrote' if res.changed else 'unchanged'} {res.path.relative_to(config.root)}")
        return
    kind = source_kind or ("git" if clone else "github")
    if kind == "github":
        from ..extras import require

        require("github", "dossier fetch --source github")
        from ..sources.github import fetch_github

        with working(f"fetching {len(numbers)} PR{'s' if len(numbers) != 1 else ''} of {repo} from GitHub"):
            results = fetch_github(config, repo, numbers, api_url=api_url, max_age_s=max_age)
    else:
        if not clone:
            raise DossierError("the git source needs --clone PATH (or DOSSIER_CLONE)")
        from rich.progress import Progress

        with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
            task = progress.add_task(f"fetch {repo}", total=len(numbers))
            results = fetch_git(config, repo, numbers, clone, ref or config.repo(repo).pinned or "HEAD",
                                lambda _: progress.advance(task))
    failed = 0
    for res in results:
        if res.error:
            failed += 1
            click.echo(f"dossier: error: {repo}#{res.pr}: {res.error}", err=True)
        else:
            click.echo(f"{'wrote' if res.changed else 'unchanged'} {res.path.relative_to(config.root)}")
    exit_for(failed, len(results))

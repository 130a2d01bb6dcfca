"""`dossier radar`: open upstream items on the lane files, and their refresh."""

from __future__ import annotations

import sys

import click

from ..fsio import write_atomic
from ..radar import as_date, load_or_fail, radar_path, refresh, today
from ._base import config_at, root_option


@click.group("radar", invoke_without_command=True)
@click.option("--refresh", "do_refresh", is_flag=True, help="Update states from GitHub (GITHUB_TOKEN if set).")
@click.option("--api-url", default=None, help="GitHub API root.")
@root_option
def command(do_refresh, api_url, root):
    """List open PRs and issues on the radar with their age; --refresh updates their states."""
    config = config_at(root, reading=True)
    if do_refresh:
        report = refresh(config, api_url)
        path = radar_path(config.root)
        if report.text != path.read_text(encoding="utf-8"):
            write_atomic(path, report.text)
        for line in report.lines:
            click.echo(line)
        for line in report.failures:
            click.echo(f"dossier: error: {line}", err=True)
        if report.failures:
            sys.exit(1)
        return
    radar = load_or_fail(config, "add open items there")
    now, limit = today(), config.radar_max_age_days
    for item in radar.items:
        d = item.data
        age = (now - as_date(d["last_checked"])).days
        where = f"{d['repo']}#{d['number']}" if d["number"] else f"{d['repo']} (no number)"
        stale = "  STALE" if age > limit else ""
        click.echo(f"{d['id']:<32} {where:<24} {d['kind']:<5} {d['state']:<6} "
                   f"checked {d['last_checked']} ({age}d ago){stale}  [{', '.join(d['lanes'])}]")
        click.echo(f"{'':<32} {d['title']}")

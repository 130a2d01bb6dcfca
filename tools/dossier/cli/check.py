"""`dossier check` (lint the knowledge base) and `dossier rule` (explain a rule)."""

from __future__ import annotations

import gc
import time

import click

from ..errors import DossierError
from ._base import config_at, exit_quickly, repo_paths, root_option


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True, help="Output format.")
@click.option("--select", multiple=True, help="Only these rule codes or prefixes (repeat or comma-separate).")
@click.option("--ignore", multiple=True, help="Skip these rule codes or prefixes.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings.")
@click.option("--source", "sources", multiple=True, help="NAME=CLONE: re-verify locks against a clone.")
@click.option("--timings", is_flag=True, help="Also print each rule's CPU time to stderr, slowest first.")
@root_option
def check(paths, fmt, select, ignore, exit_zero, sources, timings, root):
    """Lint cards, locks, playbook, lanes, generated files and SKILL.md."""
    before, started = time.process_time(), time.perf_counter()
    # One short run that keeps what it reads (cards, 15 MB of locks) to the end: the cyclic
    # collector would only walk that heap again and again (0.3-0.5 s at 700 cards) and, in
    # the forked child, touch every shared page. What little garbage has cycles goes at exit.
    gc.disable()
    from ..check import Timings, card_paths_from_args, format_findings, format_times, run_check
    from ..kb import KnowledgeBase

    config = config_at(root)
    src = repo_paths(sources, config, "--source")
    ctx = KnowledgeBase(config, sources=src)
    ctx.card_paths = card_paths_from_args(ctx, paths)
    split = lambda vals: [v.strip() for x in vals for v in x.split(",") if v.strip()]  # noqa: E731
    times = Timings() if timings else None
    findings = run_check(ctx, split(select), split(ignore), times)
    out = format_findings(findings, fmt)
    if out:
        click.echo(out)
    elif fmt == "text":
        click.echo("All checks passed.", err=True)
    if times is not None:
        click.echo(format_times(times, before, started), err=True)
    exit_quickly(0 if exit_zero or not findings else 1)


@click.command("rule")
@click.argument("code", required=False)
@click.option("--list", "list_all", is_flag=True, help="List every rule.")
def rule_cmd(code, list_all):
    """Explain a check rule (`dossier rule G001`) or list them all."""
    from ..rules import RULES

    if list_all or not code:
        for r in sorted(RULES.values(), key=lambda r: r.code):
            click.echo(f"{r.code}  {r.name:<30} {r.summary}")
        return
    r = RULES.get(code.upper())
    if r is None:
        raise DossierError(f"unknown rule {code!r}; see `dossier rule --list`")
    click.echo(f"{r.code} ({r.name}, {r.family})\n\n{r.summary}\n\n{r.doc}".rstrip())

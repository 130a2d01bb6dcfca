"""The command line: the `dossier` group and one module per command (click lives only here)."""

from __future__ import annotations

import click

from .. import __version__
from ._base import LazyGroup, leave

# Each command's module is imported only when that command runs (or help lists them all):
# `dossier check` need not import find's index, the site or the lanes runner.
COMMANDS = {
    "fetch": ".fetch:fetch", "trace": ".trace:trace_cmd", "new": ".new:new", "check": ".check:check",
    "rule": ".check:rule_cmd", "build": ".build:build", "repro": ".repro:repro", "find": ".find:command",
    "radar": ".radar:command", "lanes": ".lanes:command", "tree": ".tree:command", "link": ".link:command",
    "watch": ".watch:command",
}


@click.group(cls=LazyGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Environment: DOSSIER_ROOT (the knowledge base; default: the installed skill's folder, "
                    "else the working directory or a parent), DOSSIER_CLONE (a local upstream clone for "
                    "trace, fetch and tree), GITHUB_TOKEN (read by fetch --source github and radar --refresh, "
                    "never stored). Exit codes: 0 ok, 1 findings or no match, 2 tool error.")
@click.version_option(__version__, "-V", "--version", prog_name="dossier")
def main():
    """Diff-grounded PR dossier for SGLang Qwen VL / Omni / ASR performance work."""


def run() -> None:
    """The console script and `python -m dossier.cli`: `main`, ended as its command asks
    (see `_base.exit_quickly`); tests call `main` itself."""
    leave(main)


def command_help(name: str) -> str:
    """`dossier NAME --help` as text; the site shows it without importing click itself."""
    command = main.get_command(None, name)
    with click.Context(command, info_name=f"dossier {name}") as ctx:
        return command.get_help(ctx)


if __name__ == "__main__":  # pragma: no cover
    run()

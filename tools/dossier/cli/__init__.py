"""The command line: the `dossier` group and one module per command (click lives only here)."""

from __future__ import annotations

import click

from .. import __version__
from ._base import Group
from .build import build
from .check import check, rule_cmd
from .fetch import fetch
from .find import command as find_cmd
from .lanes import command as lanes_cmd
from .link import command as link_cmd
from .new import new
from .radar import command as radar_cmd
from .repro import repro
from .trace import trace_cmd
from .tree import command as tree_cmd
from .watch import command as watch_cmd


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Environment: DOSSIER_ROOT (the knowledge base; default: the installed skill's folder, "
                    "else the working directory or a parent), DOSSIER_CLONE (a local upstream clone for "
                    "trace, fetch and tree), GITHUB_TOKEN (read by fetch --source github and radar --refresh, "
                    "never stored). Exit codes: 0 ok, 1 findings or no match, 2 tool error.")
@click.version_option(__version__, "-V", "--version", prog_name="dossier")
def main():
    """Diff-grounded PR dossier for SGLang Qwen VL / Omni / ASR performance work."""


for _command in (fetch, trace_cmd, new, check, rule_cmd, build, repro, find_cmd, radar_cmd, lanes_cmd, tree_cmd, link_cmd,
                 watch_cmd):
    main.add_command(_command)



def command_help(name: str) -> str:
    """`dossier NAME --help` as text; the site shows it without importing click itself."""
    command = main.commands[name]
    with click.Context(command, info_name=f"dossier {name}") as ctx:
        return command.get_help(ctx)


if __name__ == "__main__":  # pragma: no cover
    main()

"""The CLI imports a command's module only when that command runs (cli.LazyGroup)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

TOOLS = str(Path(__file__).resolve().parents[1] / "tools")


def test_importing_the_cli_loads_no_command_module():
    code = ("import sys; sys.path.insert(0, %r); import dossier.cli; "
            "print(sorted(m for m in sys.modules if m.startswith('dossier.cli.') and m != 'dossier.cli._base'))" % TOOLS)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_every_command_still_lists_and_loads():
    from dossier.cli import COMMANDS, main

    res = CliRunner().invoke(main, ["--help"])
    assert res.exit_code == 0 and all(f"  {name} " in res.output for name in COMMANDS)
    assert {name: main.get_command(None, name).name for name in COMMANDS} == {n: n for n in COMMANDS}

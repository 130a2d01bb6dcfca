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


def _program(kb, *args):
    """The console script's entry (`dossier.cli.run`) with an exit handler that says whether
    the interpreter's teardown ran."""
    code = ("import sys, atexit; sys.path.insert(0, %r); atexit.register(lambda: print('teardown', file=sys.stderr)); "
            "from dossier.cli import run; sys.argv = ['dossier', *sys.argv[1:]]; run()" % TOOLS)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=kb)


def test_check_leaves_without_teardown_once_its_output_is_written(kb):
    card = kb / "references" / "cards" / "sglang" / "1.md"
    card.parent.mkdir(parents=True)
    card.write_text("no frontmatter\n")
    res = _program(kb, "check", "--root", str(kb), "--format", "json", "--select", "S")
    assert res.returncode == 1 and "teardown" not in res.stderr
    assert any(f["code"].startswith("S") for f in __import__("json").loads(res.stdout))  # flushed before leaving
    card.unlink()
    res = _program(kb, "check", "--root", str(kb), "--select", "S")
    assert res.returncode == 0 and "All checks passed." in res.stderr and "teardown" not in res.stderr


def test_other_commands_and_errors_end_as_usual(kb):
    res = _program(kb, "rule", "--list")
    assert res.returncode == 0 and "G004" in res.stdout and "teardown" in res.stderr
    (kb / "dossier.toml").write_text("[broken\n")
    res = _program(kb, "check", "--root", str(kb))
    assert res.returncode == 2 and "dossier: error:" in res.stderr and "teardown" in res.stderr

"""The main job on the shipped knowledge base: `dossier check` must be clean."""

from __future__ import annotations

from click.testing import CliRunner

from dossier.cli import main


def test_shipped_knowledge_base_passes_check(repo_root):
    res = CliRunner().invoke(main, ["check", "--root", str(repo_root)])
    assert res.exit_code == 0, res.output

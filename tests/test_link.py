"""`dossier link` and rule L009: card symptoms and playbook citations agree."""

from __future__ import annotations

from click.testing import CliRunner

from dossier.cli import main
from test_check import edit, findings, kb_card  # noqa: F401 - fixture reuse

PLAYBOOK = """# hand-written comment that must survive
entries:
  - id: vl-copies-slow
    symptom: "many small host to device copies before the vision tower"
    sublane: image
    look:
      - {repo: sglang, file: python/sglang/srt/models/qwen3_vl.py, symbols: []}
    cards: []
    lanes: [vl-single-image]
"""


def _setup(kb):
    (kb / "playbook/symptoms").mkdir(parents=True, exist_ok=True)
    (kb / "playbook/symptoms/image.yaml").write_text(PLAYBOOK)
    edit(kb, "symptoms: []", "symptoms: [vl-copies-slow]")


def test_l009_fires_and_link_fixes_it(kb_card):  # noqa: F811
    _setup(kb_card)
    found = findings(kb_card, select=["L009"])
    assert [(f.code, f.path, f.line) for f in found] == [("L009", "playbook/symptoms/image.yaml", 8)]
    runner = CliRunner()
    check = runner.invoke(main, ["link", "--check", "--root", str(kb_card)])
    assert check.exit_code == 1 and "does not cite sglang/42" in check.output
    res = runner.invoke(main, ["link", "--root", str(kb_card)])
    assert res.exit_code == 0, res.output
    text = (kb_card / "playbook/symptoms/image.yaml").read_text()
    assert "    cards: [sglang/42]" in text and text.startswith("# hand-written comment")
    assert findings(kb_card, select=["L009"]) == []
    again = runner.invoke(main, ["link", "--root", str(kb_card)])
    assert again.exit_code == 0 and "every card is cited" in again.output

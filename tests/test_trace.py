"""`dossier trace`: coverage table, exclusions and liveness over a small history."""

from __future__ import annotations

import json

from click.testing import CliRunner

from dossier.check import run_check
from dossier.cli import main
from dossier.config import load_config
from dossier.context import Context
from dossier.fetch import fetch_git

VL = "python/sglang/srt/models/qwen3_vl.py"
ASR = "python/sglang/srt/models/qwen3_asr.py"


def _history(up):
    up.write(VL, "class Vision:\n    def forward(self, x):\n        return x\n")
    up.write("README.md", "hi\n")
    up.commit("init (#1)")
    up.write(VL, "class Vision:\n    def forward(self, x):\n        x = x.contiguous()\n        x = x.to('cuda', non_blocking=True)\n        return x\n")
    up.commit("[VLM] faster (#2)")
    up.write(ASR, "class Asr:\n    pass\n")
    up.commit("model: qwen3-asr (#3)")
    up.write("README.md", "bye\n")
    up.commit("docs only (#4)")
    up.write(VL, "class Vision:\n    def forward(self, x):\n        x = x.contiguous()\n        return x\n")
    up.commit("lint sweep (#5)")


def _card(kb, pr):
    p = kb / f"references/cards/sglang/{pr}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("---\nrepo: sglang\n---\n")


def test_trace_statuses_and_json(upstream, kb):
    _history(upstream)
    _card(kb, 2)
    (kb / "references/trace-exclusions.yaml").write_text("- repo: sglang\n  pr: 5\n  reason: a lint sweep, nothing to learn\n")
    res = CliRunner().invoke(main, ["trace", "--all", "--clone", str(upstream.path), "--format", "json", "--root", str(kb)])
    assert res.exit_code == 0, res.output
    rows = {r["pr"]: r for r in json.loads(res.output)}
    assert set(rows) == {1, 2, 3, 5}  # #4 touched no family file
    assert rows[2]["status"] == "card" and rows[2]["families"] == ["qwen3-vl"]
    assert rows[3]["status"] == "missing" and rows[3]["families"] == ["qwen3-asr"]
    assert rows[5]["status"] == "excluded" and "lint" in rows[5]["reason"]
    one = CliRunner().invoke(main, ["trace", "qwen3-asr", "--clone", str(upstream.path), "--root", str(kb)])
    assert "#3" in one.output and "#2" not in one.output
    bad = CliRunner().invoke(main, ["trace", "qwen9", "--clone", str(upstream.path), "--root", str(kb)])
    assert bad.exit_code == 2 and "unknown family" in bad.output


def test_trace_live_states(upstream, kb):
    _history(upstream)
    config = load_config(kb)
    fetch_git(config, "sglang", [2, 3], str(upstream.path))
    _card(kb, 2)
    _card(kb, 3)
    res = CliRunner().invoke(main, ["trace", "--all", "--live", "--clone", str(upstream.path), "--format", "json", "--root", str(kb)])
    rows = {r["pr"]: r for r in json.loads(res.output)}
    assert rows[3]["live"]["state"] == "live"
    # #5 removed one of the two lines #2 added.
    assert rows[2]["live"]["state"] == "partly superseded" and rows[2]["live"]["present"] == 1
    upstream.write(VL, "class Vision:\n    pass\n")
    upstream.commit("rewrite (#6)")
    res = CliRunner().invoke(main, ["trace", "qwen3-vl", "--live", "--clone", str(upstream.path), "--format", "json", "--root", str(kb)])
    rows = {r["pr"]: r for r in json.loads(res.output)}
    assert rows[2]["live"]["state"] == "gone"


def _l020(kb):
    return [f for f in run_check(Context(load_config(kb)), select=["L020"])]


def test_exclusion_rule(kb):
    path = kb / "references/trace-exclusions.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("- repo: sglang\n  pr: 5\n  reason: lint sweep only here\n")
    assert _l020(kb) == []
    path.write_text("- repo: sglang\n  pr: 5\n  reason: lint\n- repo: sglang\n  pr: 5\n  reason: lint sweep only here\n")
    found = _l020(kb)
    assert [(f.line, "reason" in f.message or "twice" in f.message) for f in found] == [(1, True), (4, True)]
    _card(kb, 5)
    path.write_text("- repo: sglang\n  pr: 5\n  reason: lint sweep only here\n")
    assert "has a card" in _l020(kb)[0].message
    path.write_text("- repo: [sglang\n")
    assert "invalid YAML" in _l020(kb)[0].message


def test_family_glob_matching_nothing(kb):
    trees = kb / "references/trees"
    trees.mkdir(parents=True)
    (trees / "sglang.txt").write_text("# listed from abc\npython/sglang/srt/models/qwen3_vl.py\n")
    found = run_check(Context(load_config(kb)), select=["L030"])
    globs = {f.message.split("'")[1] for f in found}
    assert "python/sglang/srt/models/qwen3_vl.py" not in globs
    assert "python/sglang/srt/models/qwen3_asr.py" in globs
    assert all(f.path == "dossier.toml" and f.line > 1 for f in found)

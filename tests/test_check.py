"""Every card/lock rule fires on a card built to break it; a good card passes."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from dossier.check import run_check
from dossier.cli import main
from dossier.config import load_config
from dossier.kb import KnowledgeBase
from dossier.fetch import fetch_git

GOOD = """---
repo: sglang
pr: 42
title: "[VLM] batch the vision copy"
state: merged
merged: 2026-01-02
url: https://github.com/sgl-project/sglang/pull/42
stats: {files: 2, additions: 4, deletions: 2}
families: [qwen3-vl]
kind: perf
symptoms: []
lanes: [vl-single-image]
thread: read
---

# [VLM] batch the vision copy

## Motivation

Each image tensor travelled to the GPU on its own before the vision tower ran,
so a request carrying eight screenshots paid eight tiny host-to-device transfers
and a concatenation on the device; profiles showed the copies dominating prefill.

## Key implementation

`Vision.forward` in `python/sglang/srt/models/qwen3_vl.py` now receives host
tensors and performs one `non_blocking` transfer of the concatenated batch, while
`embed` in `mm_utils.py` stops moving every item ahead of the call, keeping
host tensors until the tower copies them.

## Key code excerpts

### `python/sglang/srt/models/qwen3_vl.py` `@@ -3,4 +3,5 @@`

```diff
     def forward(self, x):
+        x = x.to("cuda", non_blocking=True)
         return x
```

## Reviewed files

### Runtime

- `python/sglang/srt/models/qwen3_vl.py`
- `python/sglang/srt/managers/mm_utils.py`

## Validation

Run the `vl-single-image` lane before and after with `--requests 50` and compare
TTFT p50; the nsys timeline should show one copy instead of one per image.
"""

OTHER = GOOD.replace("pr: 42", "pr: 43").replace("/pull/42", "/pull/43")


@pytest.fixture
def kb_card(upstream, kb):
    upstream.write("python/sglang/srt/models/qwen3_vl.py",
                   "import torch\n\n\nclass Vision:\n    def forward(self, x):\n        return x\n")
    upstream.write("python/sglang/srt/managers/mm_utils.py", "def embed(items):\n    move(items)\n    return items\n")
    upstream.commit("init")
    upstream.write("python/sglang/srt/models/qwen3_vl.py",
                   "import torch\n\n\nclass Vision:\n    def forward(self, x):\n        x = x.to(\"cuda\", non_blocking=True)\n        return x\n")
    upstream.write("python/sglang/srt/managers/mm_utils.py", "def embed(items):\n    # host tensors\n    keep = items\n    return keep\n")
    upstream.commit("[VLM] batch the vision copy (#42)")
    fetch_git(load_config(kb), "sglang", [42], str(upstream.path))
    card = kb / "references/cards/sglang/42.md"
    card.parent.mkdir(parents=True)
    card.write_text(GOOD)
    return kb


def findings(kb, select=None, paths=None, sources=None):
    ctx = KnowledgeBase(load_config(kb), sources=sources or {})
    if paths is not None:
        ctx.card_paths = paths
    return run_check(ctx, select=select)


def codes(kb, select=None, **kw):
    return sorted({f.code for f in findings(kb, select, **kw)})


def edit(kb, old, new, pr=42):
    p = kb / f"references/cards/sglang/{pr}.md"
    text = p.read_text()
    assert old in text, old
    p.write_text(text.replace(old, new))


CARD_RULES = ["S", "G", "P", "L"]


def test_good_card_passes(kb_card):
    assert findings(kb_card, select=CARD_RULES) == []


@pytest.mark.parametrize("old, new, code", [
    ("---\nrepo: sglang", "repo: sglang", "S001"),
    ("families: [qwen3-vl]", "families: [qwen3-vl", "S001"),
    ("kind: perf\n", "", "S002"),
    ("pr: 42", "pr: '42'", "S002"),
    ("## Validation", "## Checks", "S003"),
    ('title: "[VLM] batch the vision copy"', 'title: "batch copies"', "S004"),
    ("merged: 2026-01-02", "merged: 2026-01-03", "S004"),
    ("additions: 4", "additions: 5", "S004"),
    ("kind: perf", "kind: speedup", "S005"),
    ("families: [qwen3-vl]", "families: [qwen9]", "S005"),
    ("repo: sglang", "repo: sglang-omni", "S006"),
    ("lanes: [vl-single-image]", "lanes: [vl-single-image]\nnoqa: {P003: ok}", "S007"),
    ("lanes: [vl-single-image]", "lanes: [vl-single-image]\nnoqa: {Z999: because this one is special}", "S007"),
    ('+        x = x.to("cuda", non_blocking=True)', '+        x = x.to("cuda")', "G001"),
    ("     def forward(self, x):", "*    def forward(self, x):", "G001"),
    ("### `python/sglang/srt/models/qwen3_vl.py` `@@ -3,4 +3,5 @@`",
     "### `python/sglang/srt/models/qwen2_vl.py` `@@ -3,4 +3,5 @@`", "G002"),
    ("`@@ -3,4 +3,5 @@`", "`@@ -9,4 +9,5 @@`", "G002"),
    ("- `python/sglang/srt/managers/mm_utils.py`", "- `python/sglang/srt/managers/scheduler.py`", "G003"),
    ("### `python/sglang/srt/models/qwen3_vl.py` `@@ -3,4 +3,5 @@`\n\n```diff\n     def forward(self, x):\n"
     "+        x = x.to(\"cuda\", non_blocking=True)\n         return x\n```", "Quoted nothing here at all.", "G007"),
    ("- `python/sglang/srt/models/qwen3_vl.py`\n- `python/sglang/srt/managers/mm_utils.py`", "", "G008"),
    ("TTFT p50; the", "TTFT p50 (TODO); the", "P001"),
    ("## Motivation\n\n", "## Motivation\n\n<!-- dossier: why -->\n", "P001"),
    ("Each image tensor travelled to the GPU on its own before the vision tower ran,\nso a request carrying eight "
     "screenshots paid eight tiny host-to-device transfers\nand a concatenation on the device; profiles showed the "
     "copies dominating prefill.", "This PR batches the vision copy for VLM models in order to batch it.", "P002"),
    ("Run the `vl-single-image` lane before and after with `--requests 50` and compare\nTTFT p50; the nsys timeline "
     "should show one copy instead of one per image.", "Run it and compare.", "P003"),
    ("`Vision.forward` in `python/sglang/srt/models/qwen3_vl.py` now receives host\ntensors and performs one "
     "`non_blocking` transfer of the concatenated batch, while\n`embed` in `mm_utils.py` stops moving every item "
     "ahead of the call, keeping\nhost tensors until the tower copies them.", "The model now receives host tensors and performs one single transfer of the whole "
     "concatenated batch, while the embedding helper stops moving every item ahead of the call, which saves time.",
     "P004"),
    ("Run the `vl-single-image` lane before and after with `--requests 50` and compare\nTTFT p50; the nsys timeline "
     "should show one copy instead of one per image.", "Measure the latency before and after this change on a "
     "single image request and make sure the numbers improved; the timeline should show a single copy.", "P005"),
    ("TTFT p50; the nsys timeline", "TTFT p50. This PR improves performance. The nsys timeline", "P008"),
    ("should show one copy instead of one per image.", "should show one copy; see the diff for details.", "P008"),
    ("lanes: [vl-single-image]", "lanes: [vl-single-image, vl-teleport]", "L001"),
    ("symptoms: []", "symptoms: [no-such-symptom]", "L002"),
])
def test_rule_fires(kb_card, old, new, code):
    edit(kb_card, old, new)
    assert code in codes(kb_card, select=[code])


def test_non_utf8_card_is_a_finding_not_a_traceback(kb_card):
    p = kb_card / "references/cards/sglang/42.md"
    p.write_bytes(GOOD.encode() + b"\n\xff\xfe\n")
    found = findings(kb_card, select=["S"])
    assert [f.code for f in found] == ["S001"] and "UTF-8" in found[0].message


def test_lock_missing_and_broken(kb_card):
    lock = kb_card / "references/evidence/sglang/42.json"
    lock.write_text("{not json")
    assert codes(kb_card, select=["S008"]) == ["S008"]
    lock.unlink()
    assert codes(kb_card, select=["S008"]) == ["S008"]


def test_lock_self_hash(kb_card):
    lock_path = kb_card / "references/evidence/sglang/42.json"
    lock = json.loads(lock_path.read_text())
    lock["stats"]["deletions"] = 0
    lock_path.write_text(json.dumps(lock))
    found = findings(kb_card, select=["G004"])
    assert found and found[0].path.endswith("evidence/sglang/42.json")


def test_excerpt_too_long(kb_card):
    block = "\n".join(["+        x = x.to(\"cuda\", non_blocking=True)"] * 17)
    edit(kb_card, '+        x = x.to("cuda", non_blocking=True)', block)
    assert "G006" in codes(kb_card, select=["G006"])


def test_lock_drift_against_source(kb_card, upstream):
    ok = findings(kb_card, select=["G005"], sources={"sglang": str(upstream.path)})
    assert ok == []
    # Rewrite history: the same PR number now lands with a different diff.
    upstream.run("reset", "-q", "--hard", "HEAD~1")
    upstream.write("python/sglang/srt/models/qwen3_vl.py", "class Other:\n    pass\n")
    upstream.commit("[VLM] batch the vision copy (#42)")
    drift = findings(kb_card, select=["G005"], sources={"sglang": str(upstream.path)})
    assert [f.code for f in drift] == ["G005"]


def test_templated_sentence_and_near_copy(kb_card, upstream):
    # A second card for another PR whose prose is the first card's with names swapped.
    shutil.copy(kb_card / "references/evidence/sglang/42.json", kb_card / "references/evidence/sglang/43.json")
    lock = json.loads((kb_card / "references/evidence/sglang/43.json").read_text())
    lock["pr"], lock["url"] = 43, lock["url"].replace("42", "43")
    from dossier.evidence import lock_digest, write_lock
    lock["lock_sha256"] = lock_digest(lock)
    write_lock(kb_card / "references/evidence/sglang/43.json", lock)
    other = OTHER.replace("eight screenshots paid eight", "twelve screenshots paid twelve")
    (kb_card / "references/cards/sglang/43.md").write_text(other)
    got = codes(kb_card, select=["P006", "P007"])
    assert got == ["P006", "P007"]


def test_suppression_with_reason_silences_one_rule(kb_card):
    edit(kb_card, "lanes: [vl-single-image]", "lanes: [vl-single-image, vl-teleport]\n"
         "noqa: {L001: \"lane lives in a downstream fork we cannot register here\"}")
    assert codes(kb_card, select=["L001"]) == []


def test_cli_formats_and_exit_codes(kb_card):
    runner = CliRunner()
    root = ["--root", str(kb_card)]
    clean = runner.invoke(main, ["check", "--select", "S,G,P,L", *root])
    assert clean.exit_code == 0, clean.output
    edit(kb_card, "kind: perf", "kind: speedup")
    text = runner.invoke(main, ["check", "--select", "S", *root])
    assert text.exit_code == 1
    assert "references/cards/sglang/42.md:10:1: S005 unknown kind 'speedup'" in text.output
    js = runner.invoke(main, ["check", "--select", "S", "--format", "json", *root])
    assert json.loads(js.output)[0]["code"] == "S005"
    gh = runner.invoke(main, ["check", "--select", "S", "--format", "github", *root])
    assert gh.output.startswith("::error file=references/cards/sglang/42.md,line=10,col=1,title=S005::")
    assert runner.invoke(main, ["check", "--select", "S", "--exit-zero", *root]).exit_code == 0
    assert runner.invoke(main, ["check", "--ignore", "S005", "--select", "S", *root]).exit_code == 0
    bad = runner.invoke(main, ["check", "--select", "Q9", *root])
    assert bad.exit_code == 2 and "unknown rule code" in bad.output
    explain = runner.invoke(main, ["rule", "G001"])
    assert explain.exit_code == 0 and "excerpt" in explain.output.lower()


def test_check_paths_subset(kb_card):
    card = kb_card / "references/cards/sglang/42.md"
    assert findings(kb_card, select=CARD_RULES, paths=[card]) == []
    res = CliRunner().invoke(main, ["check", str(kb_card / "nope.md"), "--root", str(kb_card)])
    assert res.exit_code == 2


def test_new_scaffold_fails_check_until_written_and_never_overwrites(kb_card):
    runner = CliRunner()
    (kb_card / "references/cards/sglang/42.md").unlink()
    res = runner.invoke(main, ["new", "sglang", "42", "--root", str(kb_card)])
    assert res.exit_code == 0, res.output
    text = (kb_card / "references/cards/sglang/42.md").read_text()
    assert "stats: {files: 2, additions: 4, deletions: 2}" in text
    assert "- `python/sglang/srt/models/qwen3_vl.py`" in text and "@@ -3,4 +3,5 @@" in text
    assert codes(kb_card, select=["P001", "G007"]) == ["G007", "P001"]
    (kb_card / "references/cards/sglang/42.md").write_text("hand written")
    again = runner.invoke(main, ["new", "sglang", "42", "--root", str(kb_card)])
    assert again.exit_code == 2 and "refusing to overwrite" in again.output
    assert (kb_card / "references/cards/sglang/42.md").read_text() == "hand written"


def test_build_then_stale(kb_card):
    runner = CliRunner()
    assert runner.invoke(main, ["build", "--root", str(kb_card)]).exit_code == 0
    history = (kb_card / "references/pr-history.md").read_text()
    assert "[sglang#42](cards/sglang/42.md)" in history and "`python/sglang/srt/models/qwen3_vl.py`" in history
    assert codes(kb_card, select=["B"]) == []
    edit(kb_card, "kind: perf", "kind: bugfix")
    assert codes(kb_card, select=["B"]) == ["B001"]


def test_skill_rules(kb_card):
    skill = kb_card / "SKILL.md"
    assert "K001" in codes(kb_card, select=["K"])
    skill.write_text("---\nname: Bad_Name\ndescription: x\n---\n[card](references/cards/sglang/404.md)\n")
    assert codes(kb_card, select=["K"]) == ["K002", "K005"]
    skill.write_text("---\nname: good-name\ndescription: " + "y" * 1100 + "\n---\n" + "line\n" * 600)
    assert codes(kb_card, select=["K"]) == ["K003", "K004"]
    skill.write_text("---\nname: good-name\ndescription: Use it for Qwen-VL work.\n---\n[c](references/cards/sglang/42.md)\n")
    assert codes(kb_card, select=["K"]) == []


def test_hand_edited_generated_file_is_stale(kb_card):
    runner = CliRunner()
    assert runner.invoke(main, ["build", "--root", str(kb_card)]).exit_code == 0
    history = kb_card / "references/pr-history.md"
    assert "<!-- dossier-build inputs=" in history.read_text()
    history.write_text(history.read_text().replace("| perf |", "| bugfix |"))
    found = findings(kb_card, select=["B"])
    assert [f.code for f in found] == ["B001"] and found[0].line > 1
    history.unlink()
    assert "missing" in findings(kb_card, select=["B"])[0].message


def test_skill_names_unknown_file(kb_card):
    trees = kb_card / "references/trees"
    trees.mkdir(parents=True)
    (trees / "sglang.txt").write_text("# listed from abc\npython/sglang/srt/models/qwen3_vl.py\n")
    skill = kb_card / "SKILL.md"
    skill.write_text("---\nname: good-name\ndescription: Use it.\n---\nOpen `python/sglang/srt/models/qwen3_vl.py`"
                     " then `python/sglang/srt/models/qwen9_vl.py`.\n")
    found = findings(kb_card, select=["K006"])
    assert [(f.code, f.line) for f in found] == [("K006", 5)] and "qwen9_vl.py" in found[0].message


def test_crashing_rule_becomes_x000(kb_card, monkeypatch):
    from dossier.rules import RULES

    def boom(ctx, card):
        raise KeyError("surprise")
        yield  # pragma: no cover

    import dataclasses
    monkeypatch.setitem(RULES, "P002", dataclasses.replace(RULES["P002"], func=boom))
    found = findings(kb_card, select=["P002", "X"])
    assert [f.code for f in found] == ["X000"] and "P002" in found[0].message and "KeyError" in found[0].message


def test_excerpt_heading_may_keep_function_context(kb_card):
    edit(kb_card, "`@@ -3,4 +3,5 @@`", "`@@ -3,4 +3,5 @@ import torch`")
    assert findings(kb_card, select=["G", "P"]) == []


def test_lock_drift_finds_the_recorded_commit_when_the_clones_head_lacks_it(kb_card, upstream):
    """A fork whose HEAD is another branch: G005 re-verifies from the commit the lock recorded,
    when its subject names the PR, instead of reporting the PR as not found."""
    landed = upstream.run("rev-parse", "HEAD").strip()
    upstream.run("checkout", "-q", "-b", "fork", "HEAD~1")
    upstream.commit("fork work (#7)")
    clone = {"sglang": str(upstream.path)}
    assert findings(kb_card, select=["G005"], sources=clone) == []
    # a forged lock still fails: its line hashes are compared with the recorded commit's diff
    lock_path = kb_card / "references/evidence/sglang/42.json"
    lock = json.loads(lock_path.read_text())
    from dossier.evidence import hunk_lines, lock_digest, write_lock
    hunk = lock["files"][0]["hunks"][0]
    hunk["lines"] = "".join(("+" + "0" * 10) if h.startswith("+") else h for h in hunk_lines(hunk))
    lock["lock_sha256"] = lock_digest(lock)
    write_lock(lock_path, lock)
    drift = findings(kb_card, select=["G005"], sources=clone)
    assert [f.code for f in drift] == ["G005"] and "line hash" in drift[0].message
    # a recorded commit that names another PR, or is no SHA at all, is not taken
    for commit in (upstream.run("rev-parse", "HEAD").strip(), "--output=/tmp/x", None):
        lock["source"]["commit"] = commit
        lock["lock_sha256"] = lock_digest(lock)
        write_lock(lock_path, lock)
        found = findings(kb_card, select=["G005"], sources=clone)
        assert [f.code for f in found] == ["G005"] and "PR #42 not found" in found[0].message, found
    assert landed  # the PR's commit exists in the clone, off HEAD's first-parent line


def test_every_rule_is_named_by_a_test():
    """A guard for "each rule has a test that makes it fire": a rule code no test names (as a
    string, a select or an expected finding) has no such test. L035 was one until it got
    its own (test_refresh.py)."""
    import re
    from pathlib import Path

    from dossier.rules import RULES

    tests = Path(__file__).parent
    this = Path(__file__).read_text(encoding="utf-8").split("def test_every_rule_is_named_by_a_test")[0]
    text = this + "".join(p.read_text(encoding="utf-8") for p in sorted(tests.glob("test_*.py"))
                          if p.name != Path(__file__).name)
    named = set(re.findall(r"\b([A-Z]\d{3})\b", text))
    assert sorted(set(RULES) - named) == []

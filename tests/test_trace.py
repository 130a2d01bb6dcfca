"""`dossier trace`: coverage table, exclusions and liveness over a small history."""

from __future__ import annotations

import json

from click.testing import CliRunner

from dossier.check import run_check
from dossier.cli import main
from dossier.config import load_config
from dossier.kb import KnowledgeBase
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
    # #5 removed one of the two lines #2 added; Vision.forward stands with the other: rewritten in place.
    assert rows[2]["live"]["state"] == "rewritten" and rows[2]["live"]["present"] == 1
    upstream.write(VL, "class Vision:\n    pass\n")
    upstream.commit("rewrite (#6)")
    res = CliRunner().invoke(main, ["trace", "qwen3-vl", "--live", "--clone", str(upstream.path), "--format", "json", "--root", str(kb)])
    rows = {r["pr"]: r for r in json.loads(res.output)}
    assert rows[2]["live"]["state"] == "gone"


def _l020(kb):
    return [f for f in run_check(KnowledgeBase(load_config(kb)), select=["L020"])]


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


def test_exclusion_reason_cut_by_a_yaml_comment(kb):
    path = kb / "references/trace-exclusions.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("- repo: sglang\n  pr: 5\n  reason: lint sweep, later reverted by #9 in full\n")
    found = _l020(kb)
    assert [(f.line, f.col) for f in found] == [(3, 41)] and "quote it" in found[0].message
    path.write_text("- repo: sglang\n  pr: 5\n  reason: 'lint sweep, later reverted by #9 in full'\n")
    assert _l020(kb) == []


def test_family_glob_matching_nothing(kb):
    trees = kb / "references/trees"
    trees.mkdir(parents=True)
    (trees / "sglang.txt").write_text("# listed from abc\npython/sglang/srt/models/qwen3_vl.py\n")
    found = run_check(KnowledgeBase(load_config(kb)), select=["L030"])
    globs = {f.message.split("'")[1] for f in found}
    assert "python/sglang/srt/models/qwen3_vl.py" not in globs
    assert "python/sglang/srt/models/qwen3_asr.py" in globs
    assert all(f.path == "dossier.toml" and f.line > 1 for f in found)


# --- renames, splits, former paths, pins -----------------------------------------------------

OLD = "python/sglang/srt/layers/rope_all.py"          # a shared file, later split
MROPE = "python/sglang/srt/layers/rope/mrope.py"        # the lane file split out of it
PROC_OLD = "python/sglang/srt/managers/procs/qwen_vl.py"
PROC = "python/sglang/srt/multimodal/processors/qwen_vl.py"


def _rename_and_split_history(up):
    up.write(OLD, "class Rope:\n    base = 1\n\n\nclass MRotaryEmbedding:\n    mrope_section = [1]\n")
    up.write(PROC_OLD, "def process(x):\n    return x\n")
    up.commit("init (#10)")
    up.write(OLD, "class Rope:\n    base = 1\n\n\nclass MRotaryEmbedding:\n    mrope_section = [2]\n")
    up.commit("mrope: interleave sections (#11)")              # touched the mRoPE part of the shared file
    up.write(OLD, "class Rope:\n    base = 2\n\n\nclass MRotaryEmbedding:\n    mrope_section = [2]\n")
    up.commit("llama rope base (#12)")                        # touched only the other part
    up.write(PROC_OLD, "def process(x):\n    return x * 2\n")
    up.commit("processor fix (#13)")
    (up.path / PROC).parent.mkdir(parents=True, exist_ok=True)
    (up.path / PROC_OLD).rename(up.path / PROC)
    up.commit("move processors under multimodal (#14)")       # a rename git can follow
    up.write(PROC, "def process(x):\n    return x * 3\n")
    up.commit("processor tweak (#15)")
    up.write(OLD, "class Rope:\n    base = 2\n")
    up.write(MROPE, "class MRotaryEmbedding:\n    mrope_section = [2]\n")
    up.commit("split rope_all into a package (#16)")          # a split git does not follow
    up.write(MROPE, "class MRotaryEmbedding:\n    mrope_section = [3]\n")
    up.commit("mrope fix (#17)")
    up.write(OLD, "class Rope:\n    base = 3\n")
    up.commit("llama rope after the split (#18)")             # the old path after the split: off-lane


REGISTRY = f'''
[repos.sglang]
upstream = "sgl-project/sglang"
pinned = "{{pin}}"
pinned_pr = 16
pinned_date = "2026-01-02"

[families.mm-plumbing]
title = "Shared multimodal plumbing"
globs.sglang = ["{MROPE}", "{PROC}"]

[[families.mm-plumbing.former]]
repo = "sglang"
paths = ["{PROC_OLD}"]
until = 14

[[families.mm-plumbing.former]]
repo = "sglang"
paths = ["{OLD}"]
until = 16
symbols = ["MRotaryEmbedding", "mrope"]
'''


def _registry(kb, up, pin_subject="(#16)"):
    sha = up.run("log", "--format=%H %s").splitlines()
    pin = next(l.split()[0] for l in sha if l.endswith(pin_subject))
    (kb / "dossier.toml").write_text(REGISTRY.replace("{pin}", pin))
    return pin


def _trace(kb, up, *extra):
    res = CliRunner().invoke(main, ["trace", "--all", "--clone", str(up.path), "--format", "json", "--root", str(kb),
                                    *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_trace_follows_renames_and_splits_through_former_paths(upstream, kb):
    _rename_and_split_history(upstream)
    _registry(kb, upstream, "(#18)")
    rows = {r["pr"]: r for r in _trace(kb, upstream)}
    # #10 created both former files; #11 touched the mRoPE part before the split; #13 the processor
    # under its old name; #14 the rename; #15 and #17 the new paths; #16 the split itself.
    assert set(rows) == {10, 11, 13, 14, 15, 16, 17}
    assert 12 not in rows  # the shared file's other part: the symbol filter leaves it out
    assert 18 not in rows  # the old path after the split no longer counts
    assert rows[13]["files"] == [PROC_OLD] and rows[11]["files"] == [OLD]


def test_trace_without_former_paths_misses_the_old_history(upstream, kb):
    _rename_and_split_history(upstream)
    _registry(kb, upstream, "(#18)")
    text = (kb / "dossier.toml").read_text().split("[[families")[0]
    (kb / "dossier.toml").write_text(text)
    assert {r["pr"] for r in _trace(kb, upstream)} == {14, 15, 16, 17}


def test_suggest_renames_lists_what_git_can_follow(upstream, kb):
    _rename_and_split_history(upstream)
    _registry(kb, upstream, "(#18)")
    text = (kb / "dossier.toml").read_text().split("[[families")[0]
    (kb / "dossier.toml").write_text(text)
    res = CliRunner().invoke(main, ["trace", "--all", "--clone", str(upstream.path), "--suggest-renames",
                                    "--format", "json", "--root", str(kb)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == [{"family": "mm-plumbing", "path": PROC, "old_path": PROC_OLD,
                                       "renamed_to": PROC, "until": 14, "date": "2026-01-02"}]


def test_trace_reads_the_pinned_sha_by_default(upstream, kb):
    _rename_and_split_history(upstream)
    _registry(kb, upstream, "(#16)")  # pinned before #17 and #18 landed
    assert max(r["pr"] for r in _trace(kb, upstream)) == 16
    assert max(r["pr"] for r in _trace(kb, upstream, "--ref", "HEAD")) == 17


def test_former_path_until_a_pr_that_is_not_there_is_one_error_line(upstream, kb):
    _rename_and_split_history(upstream)
    _registry(kb, upstream, "(#18)")
    (kb / "dossier.toml").write_text((kb / "dossier.toml").read_text().replace("until = 14", "until = 99"))
    res = CliRunner().invoke(main, ["trace", "--all", "--clone", str(upstream.path), "--root", str(kb)])
    assert res.exit_code == 2 and "PR #99 is not on the history" in res.output


def test_pinned_must_be_a_full_sha(kb):
    (kb / "dossier.toml").write_text('[repos.sglang]\nupstream = "sgl-project/sglang"\npinned = "3c69a4c"\n')
    res = CliRunner().invoke(main, ["trace", "--all", "--clone", ".", "--root", str(kb)])
    assert res.exit_code == 2 and "40-hex" in res.output


def test_commits_without_a_pr_number_are_excluded_by_sha(upstream, kb):
    _history(upstream)
    upstream.write(VL, "class Vision:\n    pass\n")
    sha = upstream.commit("Clean up review comments")  # rebase-merged: no (#N)
    (kb / "references").mkdir(exist_ok=True)
    (kb / "references/trace-exclusions.yaml").write_text(
        f"- repo: sglang\n  commit: {sha[:12]}\n  reason: comment-only cleanup of the vision forward\n")
    rows = [r for r in _trace(kb, upstream) if r["pr"] is None]
    assert rows and rows[0]["status"] == "excluded"
    assert run_check(KnowledgeBase(load_config(kb)), select=["L020"]) == []
    (kb / "references/trace-exclusions.yaml").write_text(
        f"- repo: sglang\n  commit: {sha[:12]}\n  pr: 3\n  reason: both keys given here\n")
    assert [f.code for f in run_check(KnowledgeBase(load_config(kb)), select=["L020"])] == ["L020"]


def test_suggest_renames_follows_a_pattern_glob(upstream, kb):
    # A `dir/**` glob: git cannot --follow a pattern, so one walk over every first-parent
    # rename finds the directory move (V1 under sglang_omni_v1/ moved into sglang_omni/).
    upstream.write("sglang_omni_v1/scheduling/simple_scheduler.py", "class S:\n    pass\n" * 20)
    upstream.write("README.md", "hi\n")
    upstream.commit("V1 pipeline (#334)")
    (upstream.path / "sglang_omni/scheduling").mkdir(parents=True)
    upstream.run("mv", "sglang_omni_v1/scheduling/simple_scheduler.py", "sglang_omni/scheduling/simple_scheduler.py")
    upstream.commit("retire V0 (#435)")
    (kb / "dossier.toml").write_text((kb / "dossier.toml").read_text().split("[[families")[0])
    res = CliRunner().invoke(main, ["trace", "--all", "--repo", "sglang-omni", "--clone", str(upstream.path),
                                    "--suggest-renames", "--format", "json", "--root", str(kb)])
    assert res.exit_code == 0, res.output
    found = {(r["family"], r["old_path"], r["until"]) for r in json.loads(res.output)}
    assert ("mm-plumbing", "sglang_omni_v1/scheduling/simple_scheduler.py", 435) in found

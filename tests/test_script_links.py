"""L031 and L032: scripts named in Measure and Validation commands exist at the pin."""

from __future__ import annotations

from test_playbook import GOOD, findings, make_kb

from dossier.rules.scripts import script_paths

CARD = """\
---
repo: sglang
pr: 16366
title: "x"
state: merged
merged: 2026-01-01
url: https://github.com/sgl-project/sglang/pull/16366
families: [qwen3-vl]
kind: perf
lanes: []
---

# x

## Validation

Run `python -m sglang.launch_server --model-path Qwen/Qwen3-VL-8B` and then
{line}
"""


def _with_measure(kb, measure):
    make_kb(kb, GOOD.replace('measure: "peak GPU memory"', f'measure: "{measure}"'))
    (kb / "references" / "trees" / "sglang.txt").write_text(
        "# tree\npython/sglang/srt/models/qwen3_vl.py\npython/sglang/launch_server.py\n"
        "benchmark/mmmu/bench_sglang.py\n", encoding="utf-8")
    return kb


def test_module_and_path_forms_are_both_read():
    text = "python -m benchmarks.eval.benchmark_asr_seedtts --port 8000 and tests/x/test_y.py::test_z"
    assert [paths for _, paths in script_paths(text)] == [
        ("tests/x/test_y.py",),
        ("benchmarks/eval/benchmark_asr_seedtts.py", "benchmarks/eval/benchmark_asr_seedtts/__main__.py")]
    assert script_paths("python -m sglang.launch_server")[0][1][0] == "python/sglang/launch_server.py"


def test_l031_fires_on_a_measure_script_gone_at_the_pin(kb):
    _with_measure(kb, "TTFA p50 (benchmarks/eval/benchmark_omni_tts_speed.py)")
    out = findings(kb, "L031")
    assert [f.code for f in out] == ["L031"] and "benchmark_omni_tts_speed.py" in out[0].message


def test_l031_passes_for_a_script_at_the_pin_and_for_our_own(kb):
    _with_measure(kb, "python -m sglang.launch_server, then playbook/lanes/vl_video.py --dry-run")
    assert findings(kb, "L031") == []


def _card(kb, line):
    make_kb(kb)
    (kb / "references" / "trees" / "sglang.txt").write_text(
        "# tree\npython/sglang/launch_server.py\n", encoding="utf-8")
    path = kb / "references" / "cards" / "sglang" / "16366.md"
    path.write_text(CARD.format(line=line), encoding="utf-8")
    return kb


def test_l032_fires_on_a_validation_script_neither_in_the_diff_nor_at_the_pin(kb):
    out = findings(_card(kb, "`python test/srt/test_vlm_accuracy.py` compares logits."), "L032")
    assert [(f.code, f.line) for f in out] == [("L032", 18)]
    assert "test/srt/test_vlm_accuracy.py is not in the diff" in out[0].message


def test_l032_accepts_a_script_the_sentence_says_is_gone(kb):
    line = "`python test/srt/test_vlm_accuracy.py` (removed later\nby #28810) compares logits."
    assert findings(_card(kb, line), "L032") == []

"""Measurements: records of playbook/repros/ runs are filed untouched, go stale with their
script, show in their card through `dossier build`, and are never typed by hand (M001-M004)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dossier.build import build
from dossier.check import run_check
from dossier.cli import main
from dossier.config import load_config
from dossier.kb import KnowledgeBase

# A stand-in repro: no torch, writes the record a device run would (a "GPU" device line).
FAKE = '''"""fake repro for tests"""
import argparse, hashlib, json, sys
from pathlib import Path

SUBJECT = "sglang#42"
TECHNIQUE = "one copy instead of many"

p = argparse.ArgumentParser()
p.add_argument("--out")
p.add_argument("--quick", action="store_true")
a = p.parse_args()
me = Path(__file__).resolve()
rec = {"schema": 1, "subject": SUBJECT, "technique": TECHNIQUE, "script": "playbook/repros/" + me.name,
       "script_sha256": hashlib.sha256(me.read_bytes()).hexdigest(),
       "device": {"gpu": "NVIDIA H200", "torch": "2.11.0", "cuda": "13.0", "transformers": "5.17.0"},
       "measured": "2026-11-30", "quick": a.quick,
       "cases": [{"name": "8 items", "shape": {"items": 8}, "before_ms": 26.65, "after_ms": 3.512, "speedup": 7.588,
                  "peak_mib_before": 165.2, "peak_mib_after": 82.6, "max_abs_err": 0.0}]}
Path(a.out).write_text(json.dumps(rec, indent=1) + "\\n")
'''

CARD = """---
repo: sglang
pr: 42
title: "one copy"
state: merged
merged: 2026-01-02
url: https://github.com/sgl-project/sglang/pull/42
stats: {files: 1, additions: 1, deletions: 0}
families: [qwen3-vl]
kind: perf
symptoms: []
lanes: []
---

# one copy

## Motivation

Text.
"""


@pytest.fixture
def mkb(kb):
    repros = kb / "playbook" / "repros"
    repros.mkdir(parents=True)
    (repros / "fake.py").write_text(FAKE)
    card = kb / "references/cards/sglang/42.md"
    card.parent.mkdir(parents=True)
    card.write_text(CARD)
    return kb


def _run(kb, *args):
    return CliRunner().invoke(main, [*args, "--root", str(kb)], catch_exceptions=False)


def _codes(kb, select, paths=None):
    ctx = KnowledgeBase(load_config(kb))
    if paths is not None:
        ctx.card_paths = paths
    return [(f.code, f.message) for f in run_check(ctx, select=select)]


def _record(kb) -> Path:
    res = _run(kb, "repro", "run", "--python", sys.executable)
    assert res.exit_code == 0, res.output
    return kb / "references/measurements/sglang/42.json"


def test_run_records_exactly_what_the_script_wrote(mkb, tmp_path):
    path = _record(mkb)
    rec = json.loads(path.read_text())
    assert rec["cases"][0]["after_ms"] == 3.512 and rec["device"]["gpu"] == "NVIDIA H200"
    assert rec["runs"] == 3 and rec["cases"][0]["speedup_runs"] == [7.588, 7.588] and "noisy" not in rec["cases"][0]
    again = _run(mkb, "repro", "run", "--python", sys.executable, "--out-dir", str(tmp_path), "--runs", "1")
    assert again.exit_code == 0
    assert json.loads((tmp_path / "fake.json").read_text())["cases"][0]["after_ms"] == 3.512
    listing = json.loads(_run(mkb, "repro", "list", "--format", "json").output)
    assert listing == [{"script": "playbook/repros/fake.py", "subject": "sglang#42", "technique": "one copy instead of many",
                        "state": "fresh", "record": "references/measurements/sglang/42.json",
                        "speedup": "7.6x faster, peak memory -50%",
                        "measured": "2026-11-30"}]


def test_quick_runs_are_never_recorded(mkb):
    res = _run(mkb, "repro", "run", "--python", sys.executable, "--quick")
    assert res.exit_code == 0 and "not recorded" in res.output
    assert not (mkb / "references/measurements").exists()


def test_record_refuses_a_raw_file_of_another_script_version(mkb, tmp_path):
    res = _run(mkb, "repro", "run", "--python", sys.executable, "--out-dir", str(tmp_path), "--runs", "1")
    assert res.exit_code == 0
    (mkb / "playbook/repros/fake.py").write_text(FAKE + "# edited\n")
    res = _run(mkb, "repro", "record", str(tmp_path / "fake.json"))
    assert res.exit_code == 2 and "another version" in res.output


def test_record_refuses_bad_input_with_one_line(mkb, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = _run(mkb, "repro", "record", str(bad))
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "broken JSON" in res.output
    bad.write_text(json.dumps({"schema": 1, "subject": "../../x", "cases": []}))
    res = _run(mkb, "repro", "record", str(bad))
    assert res.exit_code == 2 and "not a measurement record" in res.output


def test_changed_script_makes_check_fail(mkb):
    _record(mkb)
    _run(mkb, "build")
    assert _codes(mkb, ["M"]) == []
    script = mkb / "playbook/repros/fake.py"
    script.write_text(script.read_text() + "# a comment counts too\n")
    found = _codes(mkb, ["M002"])
    assert found and "stale" in found[0][1]


def test_script_without_record_fires(mkb):
    found = _codes(mkb, ["M002"])
    assert found == [("M002", "repro script has no measurement record; run it on the device")]


@pytest.mark.parametrize("mutate, fragment", [
    (lambda r: r.update(quick=True), "smoke run"),
    (lambda r: r["device"].update(gpu="CPU (x86_64)", cuda=None), "without a GPU"),
    (lambda r: r.update(schema=9), "schema must be 1"),
    (lambda r: r["cases"][0].pop("after_ms"), "only one of"),
    (lambda r: r.update(subject="seed:Bad Slug"), "neither REPO#PR"),
])
def test_malformed_record_fires(mkb, mutate, fragment):
    path = _record(mkb)
    rec = json.loads(path.read_text())
    mutate(rec)
    path.write_text(json.dumps(rec))
    messages = " | ".join(m for c, m in _codes(mkb, ["M001"]))
    assert fragment in messages


def test_card_block_is_written_by_build_and_checked(mkb):
    _record(mkb)
    card = mkb / "references/cards/sglang/42.md"
    found = _codes(mkb, ["M003"])
    assert [c for c, _ in found] == ["M003"]
    build(KnowledgeBase(load_config(mkb)))
    text = card.read_text()
    assert "## Measured on H200" in text and "| 8 items | items=8 | 26.6 | 3.51 | 7.6x faster (runs: 7.6x faster) |" in text
    assert "NVIDIA H200, torch 2.11.0, CUDA 13.0, transformers 5.17.0" in text
    assert text.startswith(CARD.rstrip("\n"))  # the hand-written part is untouched
    assert _codes(mkb, ["M003", "M004"]) == []
    # editing a number inside the block is caught; build restores it
    card.write_text(text.replace("| 3.51 |", "| 2.00 |"))  # noqa: the block is generated
    assert [c for c, _ in _codes(mkb, ["M003"])] == ["M003"]
    build(KnowledgeBase(load_config(mkb)))
    assert card.read_text() == text
    # a record that goes away takes its block with it
    (mkb / "references/measurements/sglang/42.json").unlink()
    assert [c for c, _ in _codes(mkb, ["M003"])] == ["M003"]
    build(KnowledgeBase(load_config(mkb)))
    assert "Measured on H200" not in card.read_text()


def test_number_typed_by_hand_fires(mkb):
    _record(mkb)
    build(KnowledgeBase(load_config(mkb)))
    card = mkb / "references/cards/sglang/42.md"
    card.write_text(card.read_text().replace("Text.", "On our GPU the copy fell to 3.51 ms."))
    found = _codes(mkb, ["M004"])
    assert found and "3.51" in found[0][1]


def test_hand_written_measurement_section_fires(mkb):
    card = mkb / "references/cards/sglang/42.md"
    card.write_text(card.read_text() + "\n## Measured on H200\n\nIt got faster.\n")
    assert [c for c, _ in _codes(mkb, ["M004"])] == ["M004"]


def test_shipped_records_match_their_scripts(repo_root):
    """Every shipped record was written by the script as it stands (the same check CI runs)."""
    recs = sorted((repo_root / "references/measurements").glob("*/*.json"))
    assert len(recs) >= 12
    subjects = set()
    for path in recs:
        rec = json.loads(path.read_text())
        script = repo_root / rec["script"]
        assert hashlib.sha256(script.read_bytes()).hexdigest() == rec["script_sha256"], path
        assert rec["device"]["gpu"] == "NVIDIA H200" and not rec["quick"]
        subjects.add(rec["subject"])
    assert {"seed:code2wav-first-chunk", "seed:code2wav-cuda-graphs", "seed:encoder-batching-window",
            "seed:qwen3-asr"} <= subjects and len(subjects) >= 10


def test_find_results_carry_the_speedup(mkb):
    _record(mkb)
    res = _run(mkb, "find", "one copy", "--format", "json")
    assert res.exit_code == 0, res.output
    card = next(r for r in json.loads(res.output)["results"] if r["id"] == "sglang/42")
    assert card["measured"] == {"speedup": "7.6x faster, peak memory -50%", "measured": "2026-11-30",
                                "device": "NVIDIA H200", "runs": 3, "noisy": [], "modelled": []}


def _raw(before, after, **case):
    return {"schema": 1, "subject": "sglang#42", "technique": "t", "script": "playbook/repros/fake.py",
            "script_sha256": "ab" * 32, "measured": "2026-11-30", "quick": False, "pinning": {"warmup_iters": 10},
            "device": {"gpu": "NVIDIA H200", "torch": "2.11.0", "cuda": "13.0", "transformers": "5.17.0"},
            "cases": [{"name": "c", "shape": {}, "before_ms": before, "after_ms": after,
                       "speedup": round(before / after, 3), "before_spread_ms": [before, before],
                       "after_spread_ms": [after, after], "peak_mib_before": None, "peak_mib_after": None,
                       "max_abs_err": 0.0, **case}]}


def test_runs_merge_to_median_of_medians_with_min_max_and_noisy_marks():
    from dossier import measurements as ms

    steady = ms.merge_runs([_raw(10.0, 2.0), _raw(10.4, 2.0), _raw(9.8, 2.0)])
    c = steady["cases"][0]
    assert steady["runs"] == 3 and c["before_ms"] == 10.0 and c["before_runs_ms"] == [9.8, 10.4]
    assert c["speedup"] == 5.0 and c["speedup_runs"] == [4.9, 5.2] and "noisy" not in c
    assert ms.problems(steady) == [] and ms.run_problems(steady) == []
    moved = ms.merge_runs([_raw(15.7, 3.0), _raw(21.4, 3.0), _raw(18.0, 3.0)])  # the B1/T20 eager spread
    assert moved["cases"][0]["noisy"] is True and "noisy: 1 case" in ms.headline(moved)
    assert "noisy |" in ms.render_block(moved) and "Noisy (speedup moved more than 20%" in ms.render_block(moved)
    with pytest.raises(Exception, match="not runs of one script"):
        ms.merge_runs([_raw(1.0, 1.0), {**_raw(1.0, 1.0), "script_sha256": "cd" * 32}])


def test_modelled_values_are_shown_as_modelled():
    from dossier import measurements as ms

    rec = ms.merge_runs([_raw(39.75, 20.0, modelled={"before_ms": "2 x the batch-1 median"})] * 3)
    block = ms.render_block(rec)
    assert "| 39.8 (modelled) | 20 |" in block and "(modelled) |" in block
    assert "Modelled (computed, not timed): c: before_ms = 2 x the batch-1 median." in block
    assert ms.headline(rec) == "no timed ratio; modelled 2.0x faster" and ms.flags(rec)["modelled"] == ["c"]
    bad = _raw(1.0, 1.0, modelled={"before_ms": ""})
    assert any("'modelled' maps" in p for p in ms.problems(bad))


def test_single_run_record_of_the_current_harness_fires(mkb, tmp_path):
    _record(mkb)
    assert _codes(mkb, ["M005"]) == []  # 3 runs merged
    path = mkb / "references/measurements/sglang/42.json"
    rec = json.loads(path.read_text())
    rec.pop("runs")
    rec["pinning"] = {"warmup_iters": 10}
    path.write_text(json.dumps(rec))
    found = _codes(mkb, ["M005"])
    assert found and "at least 3" in found[0][1]
    rec.pop("pinning")  # the earlier harness's records (no pinning) need three runs too
    path.write_text(json.dumps(rec))
    assert [c for c, _ in _codes(mkb, ["M005"])] == ["M005"]


def test_unlabelled_derived_value_fires(mkb):
    script = mkb / "playbook/repros/fake.py"
    script.write_text(FAKE.replace('TECHNIQUE = "one copy instead of many"',
                                   'TECHNIQUE = "one copy instead of many"\nMODELLED = ("before_ms",)'))
    _record(mkb)
    found = _codes(mkb, ["M006"])
    assert found and "derives before_ms but no case" in found[0][1]
    # labelled in the record: clean
    script.write_text(script.read_text().replace('"max_abs_err": 0.0}', '"max_abs_err": 0.0, "modelled": {"before_ms": "8 x one"}}'))
    _record(mkb)
    assert _codes(mkb, ["M006"]) == []
    # a docstring that says it simulates, with no MODELLED constant, fires too
    script.write_text(script.read_text().replace('"""fake repro for tests"""', '"""fake repro: a queueing simulation"""')
                      .replace('\nMODELLED = ("before_ms",)', ""))
    _record(mkb)
    found = _codes(mkb, ["M006"])
    assert found and "declares no MODELLED" in found[0][1]


def test_a_slowdown_reads_as_slower_everywhere():
    from dossier.measurements import headline, ratio_text

    assert [ratio_text(x) for x in (0.289, 7.588, 1.002)] == ["3.5x slower", "7.6x faster", "same speed"]
    case = {"speedup": 0.289, "peak_mib_before": 2587, "peak_mib_after": 2224}
    assert headline({"cases": [case, dict(case, speedup=0.313)]}) == "3.2-3.5x slower, peak memory -14%"
    assert headline({"cases": [{"speedup": 0.68}, {"speedup": 1.12}]}) == "1.5x slower to 1.1x faster"
    from dossier.measurements import render_block

    record = {"subject": "sglang#1", "technique": "release the copies", "measured": "2026-11-30",
              "script": "playbook/repros/x.py", "script_sha256": "0" * 64,
              "device": {"gpu": "NVIDIA H200", "torch": "2.11", "cuda": "13.0", "transformers": "5"},
              "cases": [dict(case, name="32 frames", shape={"frames": 32}, before_ms=109.0, after_ms=378.0,
                             max_abs_err=0.0)]}
    block = render_block(record)
    assert "| 3.5x slower |" in block and "0.289x" not in block
    assert "\nTechnique reproduced: release the copies. Inputs" in block  # a sentence, not a fragment


def test_a_paths_check_says_what_the_whole_check_says_of_those_files(mkb, monkeypatch):
    """`check PATHS` runs only the project rules that may report on a card (Rule.on_cards),
    yet reports exactly the whole check's findings on those cards and their locks."""
    from dossier import check as check_module
    from dossier.rules import RULES

    _record(mkb)  # M003 now fires on card 42: a project rule that reports on a card
    other = mkb / "references/cards/sglang/43.md"
    other.write_text(CARD.replace("pr: 42", "pr: 43").replace("/pull/42", "/pull/43"))

    def check(*paths):
        res = CliRunner().invoke(main, ["check", *map(str, paths), "--format", "json", "--root", str(mkb)])
        assert res.exit_code == 1, res.output
        return json.loads(res.output)

    whole = check()
    card = mkb / "references/cards/sglang/42.md"
    wanted = {"references/cards/sglang/42.md", "references/evidence/sglang/42.json"}
    part = check(card)
    assert part == [f for f in whole if f["path"] in wanted]
    assert "M003" in {f["code"] for f in part}
    assert {"B001", "S003"} <= {f["code"] for f in whole}  # a project rule on another file; card rules on 43
    assert all(RULES[f["code"]].on_cards for f in whole if RULES[f["code"]].scope == "project" and f["path"] in wanted)

    ran = []
    real = check_module._run
    monkeypatch.setattr(check_module, "_run", lambda rule, ctx, c=None: ran.append(rule.code) or real(rule, ctx, c))
    check(card)
    assert "M003" in ran and not {"B001", "M002", "L009", "K001"} & set(ran)
    ran.clear()
    check()
    assert {"B001", "M002", "L009", "K001", "M003"} <= set(ran)

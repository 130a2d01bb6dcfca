"""The radar: R rules fire and pass, the listing, --refresh through PyGithub, the generated page."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dossier.check import run_check
from dossier.cli import main
from dossier.config import load_config
from dossier.kb import KnowledgeBase
from github_standin import StandIn, pull_payload, resp

TOKEN = "ghp_RADARsentinel0123456789"

RADAR = """\
# hand-written radar; this comment must survive a refresh
items:
  - id: code2wav-first-chunk
    repo: sglang-omni
    number: null
    kind: issue
    title: Smaller first code2wav chunk
    state: open
    last_checked: 2026-03-01
    lanes: [omni-speech]
    symptoms: [omni-first-audio]
    files:
      - sglang_omni/models/qwen3_omni/config.py
      - sglang_omni/models/tts_streaming.py
    symbols: [resolve_initial_codec_chunk_frames]
    symptom: >-
      First audio waits for a whole steady chunk.
    path_status:
      sglang_omni/models/tts_streaming.py: newer than the stored tree

  - id: graph-trace
    repo: sglang-omni
    number: 1101
    kind: pr
    title: Per-shape CUDA graph hit tracing   # keep this comment
    state: open
    last_checked: 2026-03-10
    lanes: [omni-speech]
    files: [sglang_omni/models/qwen3_omni/components/code2wav_executor.py]
    symptom: Graph hit rate is invisible under load.

  - id: asr-issue
    repo: sglang-omni
    number: 77
    kind: issue
    title: Faster Qwen3-ASR
    state: open
    last_checked: 2026-03-10
    lanes: [asr-offline]
    files: [benchmarks/eval/voice_clone_qwen3_omni_wer.py]
    symptom: WER checks are slow.
"""

TREE = """\
# sglang-omni tree at 2489a10 (HEAD)
sglang_omni/models/qwen3_omni/config.py
sglang_omni/models/qwen3_omni/components/code2wav_executor.py
benchmarks/eval/voice_clone_qwen3_omni_wer.py
"""

PLAYBOOK = """\
entries:
  - id: omni-first-audio
    symptom: first audio is late
    sublane: omni-speech
    lanes: [omni-speech]
"""


@pytest.fixture
def rkb(kb, monkeypatch):
    (kb / "references/trees").mkdir(parents=True)
    (kb / "references/trees/sglang-omni.txt").write_text(TREE)
    (kb / "playbook/symptoms.yaml").write_text(PLAYBOOK)
    (kb / "references/radar.yaml").write_text(RADAR)
    monkeypatch.setenv("DOSSIER_TODAY", "2026-03-15")
    return kb


def codes(kb: Path, prefix: str = "R") -> list[tuple[str, int, str]]:
    return [(f.code, f.line, f.message) for f in run_check(KnowledgeBase(load_config(kb)), select=[prefix])]


def edit(kb: Path, old: str, new: str) -> None:
    path = kb / "references/radar.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_good_radar_passes_every_rule(rkb):
    assert codes(rkb) == []


# --- R001 ----------------------------------------------------------------------------


@pytest.mark.parametrize("old,new,line,fragment", [
    ("    kind: pr\n", "    kind: pr\n  bad: [\n", 25, "invalid YAML"),
    ("    state: open\n    last_checked: 2026-03-10\n    lanes: [omni-speech]\n",
     "    state: open\n    lanes: [omni-speech]\n", 21, "graph-trace: missing last_checked"),
    ("kind: pr", "kind: commit", 24, "kind must be one of pr, issue"),
    ("last_checked: 2026-03-10", "last_checked: last week", 27, "last_checked must be a date"),
    ("number: 77", "number: -3", 34, "number must be a positive integer"),
    ("id: asr-issue", "id: graph-trace", 32, "duplicate id graph-trace"),
    ("repo: sglang-omni\n    number: 77", "repo: vllm\n    number: 77", 33, "unknown repo 'vllm'"),
    ("tts_streaming.py: newer", "other.py: newer", 18, "path_status names sglang_omni/models/other.py"),
], ids=["yaml", "missing", "kind", "date", "number", "dup-id", "repo", "path-status"])
def test_r001_fires_on_malformed_radar(rkb, old, new, line, fragment):
    edit(rkb, old, new)
    found = codes(rkb)
    assert [c for c, _, _ in found] == ["R001"], found
    assert found[0][1] == line and fragment in found[0][2]


def test_r001_other_rules_wait_for_a_well_formed_file(rkb):
    edit(rkb, "lanes: [asr-offline]", "lanes: [no-such-lane]\n    kind: [")
    assert {c for c, _, _ in codes(rkb)} == {"R001"}


# --- R002 ----------------------------------------------------------------------------


def test_r002_fires_for_merged_pr_without_card(rkb):
    edit(rkb, "    state: open\n    last_checked: 2026-03-10\n    lanes: [omni-speech]",
         "    state: merged\n    last_checked: 2026-03-10\n    lanes: [omni-speech]")
    found = codes(rkb, "R002")
    assert len(found) == 1 and found[0][1] == 26 and "dossier fetch sglang-omni 1101" in found[0][2]


def test_r002_passes_once_the_card_exists(rkb):
    edit(rkb, "    state: open\n    last_checked: 2026-03-10\n    lanes: [omni-speech]",
         "    state: merged\n    last_checked: 2026-03-10\n    lanes: [omni-speech]")
    card = rkb / "references/cards/sglang-omni/1101.md"
    card.parent.mkdir(parents=True)
    card.write_text("---\nrepo: sglang-omni\n---\n")
    assert codes(rkb, "R002") == []


# --- R007 ----------------------------------------------------------------------------


def test_r007_fires_for_a_resolution_without_card(rkb):
    edit(rkb, "    symptom: WER checks are slow.",
         "    symptom: WER checks are slow.\n    upstream_merged:\n      - {pr: 1340, what: benchmark and profile}"
         "\n    remains: the encoder still pads every clip")
    found = codes(rkb, "R007")
    assert len(found) == 1 and "sglang-omni#1340, which has no card" in found[0][2]
    card = rkb / "references/cards/sglang-omni/1340.md"
    card.parent.mkdir(parents=True, exist_ok=True)
    card.write_text("---\nrepo: sglang-omni\n---\n")
    assert codes(rkb, "R007") == []


def test_r001_rejects_a_malformed_resolution(rkb):
    edit(rkb, "    symptom: WER checks are slow.",
         "    symptom: WER checks are slow.\n    upstream_merged: [1340]")
    found = codes(rkb, "R001")
    assert found and "upstream_merged must be a list of {pr: N, what: text}" in found[0][2]


# --- R003 ----------------------------------------------------------------------------


def test_r003_fires_when_an_entry_is_older_than_the_limit(rkb, monkeypatch):
    monkeypatch.setenv("DOSSIER_TODAY", "2026-04-05")  # 35 and 26 days after the checks
    found = codes(rkb, "R003")
    assert found == [("R003", 9, "code2wav-first-chunk: last checked 35 days ago (max 30); "
                                 "run `dossier radar --refresh`")]


def test_r003_reads_max_age_from_dossier_toml(rkb, monkeypatch):
    monkeypatch.setenv("DOSSIER_TODAY", "2026-04-05")
    toml = rkb / "dossier.toml"
    toml.write_text(toml.read_text().replace("max_age_days = 30", "max_age_days = 40"))
    assert codes(rkb, "R003") == []
    toml.write_text(toml.read_text().replace("max_age_days = 40", "max_age_days = 7"))
    assert len(codes(rkb, "R003")) == 3


def test_r003_bad_config_is_one_error_line(rkb, monkeypatch):
    toml = rkb / "dossier.toml"
    toml.write_text(toml.read_text().replace("max_age_days = 30", 'max_age_days = "soon"'))
    result = CliRunner().invoke(main, ["check", "--select", "R003", "--root", str(rkb)])
    assert result.exit_code == 2 and "max_age_days must be a positive integer" in result.stderr


# --- R004 ----------------------------------------------------------------------------


def test_r004_fires_on_a_file_nothing_knows(rkb):
    edit(rkb, "files: [benchmarks/eval/voice_clone_qwen3_omni_wer.py]",
         "files: [benchmarks/eval/voice_clone_wer.py]")
    found = codes(rkb, "R004")
    assert len(found) == 1 and found[0][1] == 40 and "benchmarks/eval/voice_clone_wer.py" in found[0][2]


def test_r004_fires_on_a_note_the_listing_has_outgrown(rkb):
    (rkb / "references/trees/sglang-omni.txt").write_text(TREE + "sglang_omni/models/tts_streaming.py\n")
    found = codes(rkb, "R004")
    assert len(found) == 1 and found[0][1] == 18 and "drop the note" in found[0][2]


def test_r004_accepts_files_known_from_a_lock(rkb):
    edit(rkb, "files: [benchmarks/eval/voice_clone_qwen3_omni_wer.py]", "files: [sglang_omni/new_asr.py]")
    lock = {"pr": 5, "repo": "sglang-omni", "files": [{"path": "sglang_omni/new_asr.py"}]}
    path = rkb / "references/evidence/sglang-omni/5.json"
    path.parent.mkdir(parents=True)
    import json

    path.write_text(json.dumps(lock))
    assert codes(rkb, "R004") == []


# --- R005 ----------------------------------------------------------------------------


def test_r005_fires_on_unknown_lane_and_playbook_entry(rkb):
    edit(rkb, "lanes: [asr-offline]", "lanes: [asr-offline, asr-turbo]")
    edit(rkb, "symptoms: [omni-first-audio]", "symptoms: [omni-first-audio, omni-gone]")
    found = codes(rkb, "R005")
    assert [(l, m) for _, l, m in found] == [(11, "code2wav-first-chunk: no playbook entry 'omni-gone'"),
                                              (39, "asr-issue: unknown lane 'asr-turbo'")]


# --- listing ---------------------------------------------------------------------------


def test_radar_lists_entries_with_their_age(rkb, monkeypatch):
    monkeypatch.setenv("DOSSIER_TODAY", "2026-04-05")
    result = CliRunner().invoke(main, ["radar", "--root", str(rkb)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    first = next(l for l in lines if l.startswith("code2wav-first-chunk"))
    assert "(35d ago)" in first and "STALE" in first and "sglang-omni (no number)" in first
    second = next(l for l in lines if l.startswith("graph-trace"))
    assert "sglang-omni#1101" in second and "(26d ago)" in second and "STALE" not in second


def test_radar_listing_of_a_broken_file_is_one_line(rkb):
    edit(rkb, "kind: pr", "kind: [")
    result = CliRunner().invoke(main, ["radar", "--root", str(rkb)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("dossier: error: references/radar.yaml:")


# --- refresh -------------------------------------------------------------------------------


@pytest.fixture
def gh(monkeypatch):
    monkeypatch.setenv("DOSSIER_GITHUB_BACKOFF", "0.001")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with StandIn() as server:
        yield server


def issue_payload(number: int, state: str) -> dict:
    return {"number": number, "state": state, "title": "Faster Qwen3-ASR", "user": {"login": "octo"},
            "labels": [], "url": f"https://api.github.com/repos/sgl-project/sglang-omni/issues/{number}"}


def test_refresh_updates_states_and_keeps_everything_else(rkb, gh, monkeypatch):
    monkeypatch.setenv("DOSSIER_TODAY", "2026-03-20")
    up = "sgl-project/sglang-omni"
    gh.route(f"/repos/{up}/pulls/1101", resp(502, {"message": "Bad Gateway"}),
             resp(200, pull_payload(gh.url, up, 1101, 3, state="closed", merged=True)))
    gh.route(f"/repos/{up}/issues/77", resp(200, issue_payload(77, "closed")))
    result = CliRunner().invoke(main, ["radar", "--refresh", "--api-url", gh.url, "--root", str(rkb)])
    assert result.exit_code == 0, result.output + result.stderr
    assert "graph-trace: sgl-project/sglang-omni#1101 open -> merged" in result.output
    assert "dossier fetch sglang-omni 1101" in result.output
    assert "code2wav-first-chunk: no number yet" in result.output
    text = (rkb / "references/radar.yaml").read_text()
    expected = (RADAR.replace("state: open\n    last_checked: 2026-03-10\n    lanes: [omni-speech]",
                              "state: merged\n    last_checked: 2026-03-20\n    lanes: [omni-speech]")
                .replace("state: open\n    last_checked: 2026-03-10\n    lanes: [asr-offline]",
                         "state: closed\n    last_checked: 2026-03-20\n    lanes: [asr-offline]"))
    assert text == expected  # comments, order and untouched entries byte for byte
    assert TOKEN not in text + result.output + result.stderr
    # The merged PR has no card yet, and R002 says so.
    assert [c for c, _, _ in codes(rkb)] == ["R002"]


def test_refresh_failure_for_one_entry_keeps_the_others(rkb, gh):
    gh.route("/repos/sgl-project/sglang-omni/issues/77", resp(200, issue_payload(77, "open")))
    result = CliRunner().invoke(main, ["radar", "--refresh", "--api-url", gh.url, "--root", str(rkb)])
    assert result.exit_code == 1
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and "graph-trace: sgl-project/sglang-omni#1101 not found" in errors[0]
    data = yaml.safe_load((rkb / "references/radar.yaml").read_text())
    by_id = {i["id"]: i for i in data["items"]}
    assert str(by_id["asr-issue"]["last_checked"]) == "2026-03-15"  # refreshed today
    assert str(by_id["graph-trace"]["last_checked"]) == "2026-03-10"  # left as it was


def test_refresh_with_a_bad_token_is_one_line_and_writes_nothing(rkb, gh):
    gh.route("/repos/sgl-project/sglang-omni/pulls/1101", resp(401, {"message": "Bad credentials"}))
    result = CliRunner().invoke(main, ["radar", "--refresh", "--api-url", gh.url, "--root", str(rkb)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "dossier: error: GitHub rejected GITHUB_TOKEN (401 Bad credentials); fix or unset it"]
    assert (rkb / "references/radar.yaml").read_text() == RADAR


def test_refresh_inserts_a_missing_state_line(rkb, gh):
    from dossier import radar

    r = radar.load(rkb, load_config(rkb).repos)
    out = radar.apply_updates(r, {"asr-issue": {"notes": "checked by hand"}})
    assert "  - id: asr-issue\n    notes: checked by hand\n    repo: sglang-omni" in out


# --- generated page --------------------------------------------------------------------------


def test_build_writes_radar_page_and_b001_tracks_it(rkb):
    result = CliRunner().invoke(main, ["build", "--root", str(rkb)])
    assert result.exit_code == 0, result.output
    page = (rkb / "references/radar.md").read_text()
    assert "[sglang-omni#1101](https://github.com/sgl-project/sglang-omni/pull/1101)" in page
    assert "`sglang_omni/models/tts_streaming.py`: newer than the stored tree" in page
    assert "| [asr-issue](#asr-issue) | [sglang-omni#77](https://github.com/sgl-project/sglang-omni/issues/77) |" in page
    assert not [f for f in run_check(KnowledgeBase(load_config(rkb)), select=["B001"]) if "radar" in f.path]
    edit(rkb, "title: Faster Qwen3-ASR", "title: Much faster Qwen3-ASR")
    stale = [f for f in run_check(KnowledgeBase(load_config(rkb)), select=["B001"]) if "radar" in f.path]
    assert [f.code for f in stale] == ["B001"]


# --- the shipped radar -------------------------------------------------------------------------


def test_shipped_radar_is_clean(repo_root):
    # R003 depends on the calendar, so it is left to `dossier check` itself.
    found = run_check(KnowledgeBase(load_config(repo_root)), select=["R001", "R002", "R004", "R005"])
    assert found == []
    data = yaml.safe_load((repo_root / "references/radar.yaml").read_text())
    assert {i["id"] for i in data["items"]} >= {"omni-code2wav-first-chunk", "omni-encoder-batch-window",
                                               "omni-code2wav-graph-hit-trace", "omni-qwen3-asr-speed"}

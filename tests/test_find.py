"""`dossier find`: ranking quality on hand-made reports, JSON shape, limits, errors, cache."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from dossier import find
from dossier.cli import main
from dossier.config import load_config
from dossier.kb import KnowledgeBase
from dossier.yamlio import read_yaml

from conftest import ROOT
from test_playbook import make_kb

SECOND = """\
  - id: asr-stream-late
    symptom: "Streaming transcription returns text only at the end"
    sublane: asr-streaming
    look:
      - repo: sglang
        file: python/sglang/srt/entrypoints/openai/streaming_asr.py
        symbols: [split_audio_chunks]
    measure: "time to first text"
    lanes: [asr-http-stream]
"""


@pytest.fixture
def small_kb(kb):
    from test_playbook import GOOD

    make_kb(kb, GOOD + SECOND)
    with open(kb / "references" / "trees" / "sglang.txt", "a") as fh:
        fh.write("python/sglang/srt/entrypoints/openai/streaming_asr.py\n"
                 "python/sglang/srt/entrypoints/openai/serving_transcription.py\n")
    return kb


def run(kb, *args):
    return CliRunner().invoke(main, ["find", *args, "--root", str(kb)])


@pytest.fixture(scope="module")
def shipped_index() -> dict:
    """The shipped knowledge base's index, built once for the tests that search it (searching only reads it)."""
    return find.build_index(KnowledgeBase(load_config(ROOT)))  # no cache write into the checkout


def test_shipped_queries_find_the_expected_file(repo_root, shipped_index):
    queries = read_yaml(repo_root / "tests" / "find_queries.yaml")["queries"]
    assert len(queries) >= 25
    index = shipped_index
    misses = []
    for q in queries:
        top = find.search(index, q["q"], limit=10)["files"][:5]
        if q["file"] not in top:
            misses.append((q["q"], q["file"], top))
    assert len(misses) <= len(queries) // 10, misses


def test_synonyms_map_user_words_to_one_token():
    assert "~oom" in find.tokenize("the server ran Out of Memory")
    assert "~oom" in find.tokenize("video requests blow up memory")
    assert "~ttft" in find.tokenize("time to first token is high")
    assert "~asr" in find.tokenize("speech recognition")
    assert "~vit" in find.tokenize("the vision tower") and "~vit" in find.tokenize("ViT")
    assert "~amd" in find.tokenize("ROCm") and "~npu" in find.tokenize("Ascend")
    assert "~cudagraph" in find.tokenize("CUDA graph") and "~cudagraph" in find.tokenize("cudagraph")
    assert "~mrope" in find.tokenize("position ids") and "~epd" in find.tokenize("encoder disaggregation")
    assert "~h2d" in find.tokenize("host to device copies")
    assert find.tokenize("images") == find.tokenize("image")


def test_json_shape(small_kb):
    res = run(small_kb, "video", "out of memory", "--format", "json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert set(data) >= {"query", "files", "top_files", "results"}
    first = data["results"][0]
    assert first["kind"] == "entry" and first["id"] == "vl-video-oom"
    assert first["files"] == ["python/sglang/srt/models/qwen3_vl.py"]
    assert first["cards"] == ["sglang/16366"] and first["lanes"] == ["vl-video"]
    assert first["symptom"].startswith("Video requests") and isinstance(first["score"], float)
    for r in data["results"]:
        assert {"kind", "id", "score", "files", "cards", "lanes"} <= set(r)
        assert r["kind"] in {"entry", "card", "file"}
        assert "symptom" in r or "title" in r
    assert data["files"][0] == "python/sglang/srt/models/qwen3_vl.py"


def test_text_output_names_files_cards_lanes(small_kb):
    res = run(small_kb, "streaming transcription late")
    assert res.exit_code == 0, res.output
    assert "Files to open first:" in res.output
    assert "python/sglang/srt/entrypoints/openai/streaming_asr.py" in res.output.split("\n")[1]
    assert "lanes: asr-http-stream" in res.output


def test_limit(small_kb):
    data = json.loads(run(small_kb, "qwen3", "vl", "video", "streaming", "--limit", "1", "--format", "json").output)
    assert len(data["results"]) == 1
    assert run(small_kb, "video", "--limit", "0").exit_code == 2


@pytest.mark.parametrize("query", [[], ["   "], ["the", "of", "and"], ["xyzzy", "plugh"]])
def test_empty_or_garbage_query_is_one_clear_line(small_kb, query):
    res = run(small_kb, *query)
    lines = [l for l in res.output.splitlines() if l]
    assert len(lines) == 1
    if "nothing in the playbook" in lines[0]:  # a well-formed query that matches nothing: exit 1, like grep
        assert res.exit_code == 1 and lines[0].startswith("dossier: nothing")
    else:
        assert res.exit_code == 2 and lines[0].startswith("dossier: error: empty query")


def test_text_output_has_no_raw_scores(small_kb):
    res = run(small_kb, "qwen3", "vl", "video")
    assert res.exit_code == 0
    assert not __import__("re").search(r"\(\d+\.\d+\)", res.output)


def test_index_is_cached_and_invalidated(small_kb, monkeypatch):
    from dossier.find import _index

    ctx = KnowledgeBase(load_config(small_kb))
    first = find.load_index(ctx)
    assert (small_kb / ".dossier-cache" / f"{find.CACHE_NAME}.json").exists()
    monkeypatch.setattr(_index, "build_index", lambda ctx: pytest.fail("cache was not used"))
    assert find.load_index(ctx) == first
    # Keyed by content, not timestamps: a touch keeps the cache, an edit rebuilds it.
    path = small_kb / "playbook" / "symptoms" / "video.yaml"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert find.load_index(ctx) == first
    path.write_text(path.read_text().replace("blow up memory", "blow up memory badly"))
    monkeypatch.setattr(_index, "build_index", lambda ctx: {"docs": [], "df": {}, "avg": 0})
    assert find.load_index(ctx)["docs"] == []


def test_synonym_table_is_shipped_data(tmp_path):
    from dossier.errors import DossierError
    from dossier.find import _text

    table = _text.load_synonyms()
    assert "out of memory" in table["oom"] and "ascend" in table["npu"]
    bad = tmp_path / "synonyms.yaml"
    bad.write_text("oom: out of memory\n")
    with pytest.raises(DossierError, match="must map to a list"):
        _text.load_synonyms(bad)


def test_card_files_follow_the_key_implementation(small_kb, repo_root):
    """A card leads with the file its key implementation describes first, not its biggest or
    first-quoted file (#22089: streaming_asr.py, though serving_transcription.py has more churn
    and the first excerpt)."""
    import shutil

    for sub, ext in (("cards", "md"), ("evidence", "json")):
        (small_kb / "references" / sub / "sglang").mkdir(parents=True, exist_ok=True)
        shutil.copy(repo_root / "references" / sub / "sglang" / f"22089.{ext}",
                    small_kb / "references" / sub / "sglang" / f"22089.{ext}")
    data = json.loads(run(small_kb, "chunked streaming transcription", "--format", "json", "--limit", "20").output)
    card = next(r for r in data["results"] if r["id"] == "sglang/22089")
    assert card["files"][:2] == ["python/sglang/srt/entrypoints/openai/streaming_asr.py",
                                 "python/sglang/srt/entrypoints/openai/serving_transcription.py"]


def test_an_entry_shares_its_evidence_among_its_files():
    """A playbook entry names places to look for a class of symptoms, a card the files of one
    fix: a card scoring a little below an entry still puts its file first."""
    entry = {"kind": "entry", "id": "e", "files": ["a.py", "b.py", "c.py"], "repos": ["r"] * 3}
    card = {"kind": "card", "id": "r/1", "files": ["d.py"], "repos": ["r"]}
    ranked = find.rank_files([(10.0, entry), (9.0, card)])
    assert [path for (_, path), _ in ranked] == ["d.py", "a.py", "b.py", "c.py"]
    # ... but one clearly better entry still wins
    assert find.rank_files([(30.0, entry), (9.0, card)])[0][0] == ("r", "a.py")


def test_find_on_real_upstream_reports(repo_root, shipped_index):
    """100+ user reports from upstream threads, each mapped to the fixing PR's card and file.

    The fixing card must be in the top five for 85% of them and the right file first for
    70% (both met: 89% and 73% on 105 reports; part 4 was labelled before find ran on it).
    `scripts/find_eval.py --misses` prints both figures and every miss.
    """
    import sys

    sys.path.insert(0, str(repo_root / "scripts"))
    import find_eval

    reports = find_eval.load_reports(sorted((repo_root / "tests").glob("find_reports*.yaml")))
    assert len(reports) >= 100
    assert len({r["source"] for r in reports}) == len(reports)  # one report per thread
    assert sum(r["topic"] in ("omni", "asr") for r in reports) * 3 >= len(reports)
    for r in reports:
        assert (repo_root / "references" / "cards" / f"{r['card']}.md").exists(), r
    s = find_eval.summary(find_eval.score(reports, shipped_index))
    assert s["card_top5"] >= 0.85, s
    assert s["file_first"] >= 0.70, s


def test_find_never_lists_a_file_absent_at_the_pin(small_kb, repo_root):
    """A card's file gone from the pin shows as its new place where the move is known ("was X; now Y"),
    and is left out otherwise (#31591's encode_server.py and encode_receiver.py, gone since #30398)."""
    import shutil

    for sub, ext in (("cards", "md"), ("evidence", "json")):
        (small_kb / "references" / sub / "sglang").mkdir(parents=True, exist_ok=True)
        shutil.copy(repo_root / "references" / sub / "sglang" / f"31591.{ext}",
                    small_kb / "references" / sub / "sglang" / f"31591.{ext}")
    old = "python/sglang/srt/disaggregation/encode_server.py"
    new = "python/sglang/srt/disaggregation/encoder/http_server.py"
    with open(small_kb / "references" / "trees" / "sglang.txt", "a") as fh:
        fh.write(new + "\n")
    sup = {"schema": 2, "repos": {"sglang": {"ref": "x", "cards": {"31591": {
        "added": 17, "present": 3, "state": "moved", "lock": "x", "moved_to": [new + "::handle_send_request"],
        "moved_files": {old: new}, "superseded_by": [{"pr": 30398, "commit": "8a123cbd0e00", "date": "2026-08-21",
                                                       "title": "[Refactor] New EPD (#30398)", "lines": 14,
                                                       "how": "moved", "to": [new + "::handle_send_request"]}]}}}}}
    (small_kb / "references" / "supersession.json").write_text(json.dumps(sup))
    res = run(small_kb, "EPD mooncake early release embeddings gpu_id", "--format", "json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    listed = [f["path"] for f in data["top_files"]] + [f for r in data["results"] for f in r["files"]]
    assert not any("encode_server.py" in f or "encode_receiver.py" in f for f in listed), listed
    top = next(f for f in data["top_files"] if f["path"] == new)
    assert top["was"] == old
    text = run(small_kb, "EPD mooncake early release embeddings gpu_id").output
    assert f"{new}  (was {old}; now this)" in text and "moved to " + new in text
    # A playbook entry that names the new path itself shows no "was": the move is the card's, not its.
    (small_kb / "playbook" / "symptoms").mkdir(parents=True, exist_ok=True)
    (small_kb / "playbook" / "symptoms" / "epd.yaml").write_text(
        "entries:\n  - id: epd-early-release\n    symptom: EPD mooncake embeddings released early\n"
        "    sublane: encoder-parallel\n    look:\n      - repo: sglang\n"
        f"        file: {new}\n        why: the receiver\n    cards: [sglang/31591]\n    measure: x\n"
        "    lanes: [vl-encoder-dp]\n")
    data = json.loads(run(small_kb, "EPD mooncake early release embeddings gpu_id", "--format", "json").output)
    entry = next(r for r in data["results"] if r["id"] == "epd-early-release")
    assert new in entry["files"] and "was" not in entry
    assert "was" not in next(f for f in data["top_files"] if f["path"] == new)


def test_help_has_h_the_environment_and_every_option():
    from click.testing import CliRunner

    from dossier.cli import main

    top = CliRunner().invoke(main, ["-h"])
    assert top.exit_code == 0
    for var in ("DOSSIER_ROOT", "DOSSIER_CLONE", "GITHUB_TOKEN"):
        assert var in top.output
    for name, command in main.commands.items():
        subs = getattr(command, "commands", {None: command})
        for sub_name, sub in subs.items():
            for param in sub.params:
                if param.param_type_name == "option" and param.name != "help":
                    assert param.help, f"dossier {name} {sub_name or ''} --{param.name} has no help"
    assert "env var: DOSSIER_CLONE" in " ".join(CliRunner().invoke(main, ["trace", "-h"]).output.split())

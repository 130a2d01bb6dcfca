"""Playbook loading, rendering, and the L003-L008 rules (each made to fire on a tiny kb)."""

from __future__ import annotations

import json
import textwrap

from dossier import playbook, playbook_page
from dossier.check import run_check
from dossier.config import load_config
from dossier.kb import KnowledgeBase

GOOD = """\
entries:
  - id: vl-video-oom
    symptom: "Video requests blow up memory"
    sublane: video
    aliases: [video OOM]
    look:
      - repo: sglang
        file: python/sglang/srt/models/qwen3_vl.py
        symbols: [Qwen3VLForConditionalGeneration.get_video_feature, get_image_feature]
        why: "features stay on the GPU"
    cards: [sglang/16366]
    knobs: [--keep-mm-feature-on-device]
    measure: "peak GPU memory"
    lanes: [vl-video]
"""


def make_kb(kb, text=GOOD, name="video.yaml", card=True, tree=True):
    (kb / "playbook" / "symptoms").mkdir(exist_ok=True)
    (kb / "playbook" / "symptoms" / name).write_text(text, encoding="utf-8")
    if card:
        (kb / "references" / "cards" / "sglang").mkdir(parents=True, exist_ok=True)
        (kb / "references" / "cards" / "sglang" / "16366.md").write_text("---\nrepo: sglang\npr: 16366\n---\n", encoding="utf-8")
    if tree:
        trees = kb / "references" / "trees"
        trees.mkdir(parents=True, exist_ok=True)
        (trees / "sglang.txt").write_text("# sglang tree at abc\npython/sglang/srt/models/qwen3_vl.py\n", encoding="utf-8")
        (trees / "sglang.symbols.json").write_text(json.dumps({"repo": "sglang", "commit": "abc", "files": {
            "python/sglang/srt/models/qwen3_vl.py": ["Qwen3VLForConditionalGeneration",
                                                    "Qwen3VLForConditionalGeneration.get_video_feature",
                                                    "Qwen3VLForConditionalGeneration.get_image_feature"]}}))
    return kb


def findings(kb, codes="L003,L004,L005,L006,L007,L008"):
    ctx = KnowledgeBase(load_config(kb))
    return run_check(ctx, codes.split(","), None)


def test_good_playbook_is_clean(kb):
    assert findings(make_kb(kb)) == []


def test_loader_records_lines(kb):
    make_kb(kb)
    entry = playbook.load(kb).entries[0]
    assert playbook.line_of(entry, "cards", 0) == 11
    assert playbook.line_of(entry["look"][0], "symbols", 1) == 9
    assert entry["_file"] == "playbook/symptoms/video.yaml"


def test_l003_missing_card_points_at_its_line(kb):
    make_kb(kb, GOOD.replace("cards: [sglang/16366]", "cards:\n      - sglang/16366\n      - sglang/99999"))
    out = findings(kb)
    assert [(f.code, f.line) for f in out] == [("L003", 13)]
    assert "sglang/99999" in out[0].message


def test_l003_malformed_card_id(kb):
    make_kb(kb, GOOD.replace("sglang/16366", "16366"))
    assert [f.code for f in findings(kb)] == ["L003"]


def test_l004_unknown_lane(kb):
    make_kb(kb, GOOD.replace("lanes: [vl-video]", "lanes: [vl-video, no-such-lane]"))
    out = findings(kb)
    assert [(f.code, f.line) for f in out] == [("L004", 14)]


def test_l005_unknown_file_and_repo(kb):
    text = GOOD.replace("python/sglang/srt/models/qwen3_vl.py", "python/sglang/srt/models/gone.py")
    make_kb(kb, text)
    out = findings(kb, "L005")
    assert [(f.code, f.line) for f in out] == [("L005", 8)]
    make_kb(kb, GOOD.replace("repo: sglang", "repo: vllm"))
    assert [f.code for f in findings(kb, "L005")] == ["L005"]


def test_l005_without_any_tree_listing(kb):
    make_kb(kb, tree=False)
    assert [f.code for f in findings(kb, "L005")] == ["L005"]


def test_l006_unknown_symbol(kb):
    make_kb(kb, GOOD.replace("get_image_feature]", "get_audio_feature]"))
    out = findings(kb)
    assert [(f.code, f.line) for f in out] == [("L006", 9)]
    assert "get_audio_feature" in out[0].message


def test_l006_no_listing_for_file(kb):
    make_kb(kb)
    (kb / "references" / "trees" / "sglang.symbols.json").write_text('{"repo": "sglang", "files": {}}')
    out = findings(kb, "L006")
    assert len(out) == 1 and "no symbol listing" in out[0].message


def test_l007_invalid_yaml_line(kb):
    make_kb(kb, "entries:\n  - id: x\n    symptom: [unclosed\n")
    out = findings(kb)
    assert [f.code for f in out] == ["L007"] and out[0].line >= 3


def test_l007_missing_field_duplicate_id_unknown_sublane(kb):
    make_kb(kb)
    second = GOOD.replace("sublane: video", "sublane: holography").replace('    measure: "peak GPU memory"\n', "")
    (kb / "playbook" / "symptoms" / "video2.yaml").write_text(second, encoding="utf-8")
    msgs = [(f.code, f.path, f.line, f.message) for f in findings(kb)]
    assert all(m[0] == "L007" and m[1] == "playbook/symptoms/video2.yaml" for m in msgs)
    text = " | ".join(m[3] for m in msgs)
    assert "measure" in text and "duplicate id 'vl-video-oom'" in text and "unknown sublane 'holography'" in text
    assert any(m[2] == 4 and "sublane" in m[3] for m in msgs)


def test_l007_not_kebab_and_bad_look(kb):
    make_kb(kb, GOOD.replace("id: vl-video-oom", "id: Video_OOM").replace("        file: python/sglang/srt/models/qwen3_vl.py\n", ""))
    msgs = " | ".join(f.message for f in findings(kb, "L007"))
    assert "kebab-case" in msgs and "needs `repo` and `file`" in msgs


def test_l008_no_lane_no_look(kb):
    text = textwrap.dedent("""\
        entries:
          - id: bare
            symptom: "something is slow"
            sublane: image
            measure: "latency"
            lanes: []
        """)
    make_kb(kb, text)
    out = findings(kb)
    assert [(f.code, f.line) for f in out] == [("L008", 2), ("L008", 2)]


def test_render_markdown_groups_and_links(kb):
    make_kb(kb)
    md = playbook_page.render_markdown(KnowledgeBase(load_config(kb)))
    assert "## Video: raw file/URL and processor output" in md
    assert "[sglang/16366](cards/sglang/16366.md)" in md
    assert "`python/sglang/srt/models/qwen3_vl.py`" in md and "`vl-video` (" in md
    assert "_line" not in md


def test_shipped_playbook_passes_and_covers_every_sublane(repo_root):
    ctx = KnowledgeBase(load_config(repo_root))
    book = playbook.load(repo_root)
    assert book.problems == []
    assert {e["sublane"] for e in book.entries} == set(playbook.SUBLANES)
    out = run_check(ctx, ["L004", "L005", "L006", "L007", "L008"], None)
    assert out == [], out

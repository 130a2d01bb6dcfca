"""P009: a Validation sentence that predicts an effect cites a measured number or says it is not measured."""

from __future__ import annotations

from test_script_links import CARD
from test_playbook import findings, make_kb

from dossier.rules.predictions import unsupported_predictions


def test_unsupported_predictions_are_found_and_supported_ones_pass():
    prose = ("Run the lane at this commit and its parent. TTFT p50 should drop at c8. "
             "The thread measured TTFT p50 falling from 310 ms to 240 ms on one H200, so it should drop here too. "
             "Throughput should roughly double; that is not measured. "
             "A multi-node launch should fall back to the by-value path. "
             "On Qwen2.5-VL the answer should be faster to arrive.")
    assert unsupported_predictions(prose) == ["TTFT p50 should drop at c8.",
                                              "On Qwen2.5-VL the answer should be faster to arrive."]


def test_p009_fires_on_a_card_and_passes_once_the_number_is_there(kb):
    make_kb(kb)
    path = kb / "references" / "cards" / "sglang" / "16366.md"
    path.write_text(CARD.format(line="the `vl-video` lane: peak memory should drop under c8."), encoding="utf-8")
    out = findings(kb, "P009")
    assert [f.code for f in out] == ["P009"] and "prediction without a measured number" in out[0].message
    path.write_text(CARD.format(line="the `vl-video` lane: peak memory should drop under c8 (not measured)."),
                    encoding="utf-8")
    assert findings(kb, "P009") == []


def test_p010_fires_on_thread_status_in_prose_even_when_it_wraps(kb):
    make_kb(kb)
    path = kb / "references" / "cards" / "sglang" / "16366.md"
    path.write_text(CARD.format(line="the `vl-video` lane (not measured). No PR thread\nwas found, so this is read\n"
                                     "from the diff."), encoding="utf-8")
    out = findings(kb, "P010")
    assert [f.code for f in out] == ["P010", "P010"]
    assert "No PR thread was found" in out[0].message and "read from the diff" in out[1].message
    path.write_text(CARD.format(line="the `vl-video` lane (not measured)."), encoding="utf-8")
    assert findings(kb, "P010") == []


def test_p011_fires_without_a_thread_line_and_on_an_unknown_value(kb):
    make_kb(kb)
    path = kb / "references" / "cards" / "sglang" / "16366.md"
    text = CARD.format(line="the `vl-video` lane (not measured).")
    assert "\nthread:" not in text
    path.write_text(text, encoding="utf-8")
    out = findings(kb, "P011")
    assert [(f.code, f.line) for f in out] == [("P011", 1)] and "no `thread:`" in out[0].message
    front_end = text.index("\n---\n", 4)
    for value, fires in (("maybe", True), ("none found", True), ("none found (searched 2026-12-01)", False),
                         ("read", False)):
        path.write_text(text[:front_end] + f"\nthread: {value}" + text[front_end:], encoding="utf-8")
        got = findings(kb, "P011")
        assert bool(got) == fires, value
        if fires:
            assert got[0].line > 1 and "neither `read` nor" in got[0].message

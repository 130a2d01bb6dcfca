"""L033 and L034: lane commands in cards and the playbook parse with the lane's own parser."""

from __future__ import annotations

import json

from test_playbook import GOOD, findings, make_kb
from test_script_links import CARD

from dossier.lane_options import lane_options, options_cached, probe_ahead
from dossier.rules.lane_commands import lane_invocations



def test_invocations_read_inline_spans_that_wrap_and_fenced_blocks():
    text = ("Run `python playbook/lanes/omni_speech.py --server-url http://h:8000\n--gpus 2 --output a.json`"
            " and\n```bash\npython playbook/lanes/vl_video.py --dry-run > out.txt\n```\n")
    found = [(script, args) for _, script, args in lane_invocations(text)]
    assert ("omni_speech.py", ["--server-url", "http://h:8000", "--gpus", "2", "--output", "a.json"]) in found
    assert ("vl_video.py", ["--dry-run"]) in found


def test_lane_options_come_from_the_lanes_own_parser(kb):
    opts = lane_options(kb)["omni_speech.py"]["options"]
    assert opts["--gpus"]["choices"] == ["1", "2", "3"] and "--repeat-media" in opts


def test_options_cached_says_whether_a_cold_run_must_start_the_lane_subprocess(kb):
    assert not options_cached(kb)  # no .dossier-cache: check starts the lane subprocess early
    lane_options(kb)
    assert options_cached(kb)
    script = kb / "playbook" / "lanes" / "omni_speech.py"
    script.write_text(script.read_text() + "\n# edited\n")
    assert not options_cached(kb)  # a lane changed: its options are probed again


def test_the_probe_sent_ahead_gives_lane_options_their_answer(kb):
    from dossier.lane_interpreter import LaneInterpreter

    interp = LaneInterpreter(kb)
    try:
        assert probe_ahead(kb, interp) and interp._ahead  # cold: sent, its answer pending
        found = lane_options(kb, interp)
        assert not interp._ahead and not interp._answered  # the early answer was the one taken
        assert found == lane_options(kb) and "--gpus" in found["omni_speech.py"]["options"]
        assert not probe_ahead(kb, interp) and not interp._ahead  # cached now: nothing sent
    finally:
        interp.close()


def _card(kb, line):
    make_kb(kb)
    (kb / "references" / "cards" / "sglang" / "16366.md").write_text(CARD.format(line=line), encoding="utf-8")
    return kb


def test_l033_fires_on_an_unknown_option_and_a_bad_choice(kb):
    line = "`python playbook/lanes/omni_speech.py --server-url http://h:8000 --gpus 4 --thinker-tp-size 2`."
    out = findings(_card(kb, line), "L033")
    assert sorted(f.message for f in out) == ["omni_speech.py: --gpus 4 is not one of 1, 2, 3",
                                              "omni_speech.py: unknown option --thinker-tp-size"]
    assert {f.line for f in out} == {18}


def test_l033_fires_on_a_server_flag_sglang_lacks(kb):
    (kb / "references" / "trees").mkdir(parents=True, exist_ok=True)
    line = ("`python playbook/lanes/vl_video.py --launch --server-cmd \"python -m sglang.launch_server "
            "--model-path {model} --port {port} --keep-mm-feature-on-devic\"`")
    _card(kb, line)
    (kb / "references" / "trees" / "sglang-release.json").write_text(json.dumps(
        {"version": "0.5.23", "paths": [], "flags": ["--model-path", "--port"], "env": []}))
    out = findings(kb, "L033")
    assert [f.message for f in out] == [
        "vl_video.py: server flag --keep-mm-feature-on-devic is in neither sglang at the pin nor the newest release"]


def test_l033_passes_a_command_the_lane_takes(kb):
    line = "`python playbook/lanes/omni_speech.py --server-url http://h:8000 --gpus 2 --repeat-media --output a.json`"
    assert findings(_card(kb, line), "L033") == []


def test_l034_fires_on_a_playbook_measure_with_an_unknown_option(kb):
    make_kb(kb, GOOD.replace('measure: "peak GPU memory"',
                             'measure: "peak memory: python playbook/lanes/vl_video.py --concurency 8"'))
    out = findings(kb, "L034")
    assert [f.code for f in out] == ["L034"] and "unknown option --concurency" in out[0].message


def test_l033_fires_when_the_lane_itself_refuses_the_options(kb):
    line = "`python playbook/lanes/omni_speech.py --server-url <url> --media-dir <your clips>`."
    out = findings(_card(kb, line), "L033")
    assert [f.code for f in out] == ["L033"] and "--media-dir does not apply" in out[0].message
    # A placeholder alone is never the lane's complaint.
    ok = "`python playbook/lanes/omni_speech.py --server-url <the server> --gpus 2`."
    assert findings(_card(kb, ok), "L033") == []


def test_l033_reads_prose_that_runs_a_registered_lane_with_options(kb):
    # The claims sweep found `--image-size 1280x720` given in prose: the lane takes one int.
    line = "Run the `vl-single-image` lane with `--image-size 1280x720` and `--requests 4`."
    out = findings(_card(kb, line), "L033")
    assert [f.message for f in out] == ["vl_image.py: --image-size takes an int, not 1280x720"]
    assert findings(_card(kb, "Run the `vl-single-image` lane with `--imagez 3`."), "L033")[0].message == \
        "vl_image.py: unknown option --imagez"


def test_l033_prose_leaves_server_flags_and_the_run_separator_alone(kb):
    line = ("Run the `vl-single-image` lane with `-- --image-size 2048`, and the `vl-video` lane with "
            "`--frames 64` and `--enable-precise-embedding-interpolation` in `--server-cmd`.")
    assert findings(_card(kb, line), "L033") == []

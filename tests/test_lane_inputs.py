"""Inputs only some servers honour: processor-output video (in-process Engine) and a video's own soundtrack."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from lane_harness import FAKES, subprocess_env  # noqa: E402
from standin_server import StandIn  # noqa: E402
from test_lanes import run_lane  # noqa: E402

# ------------------------------------------------------------------ processor-output video (sglang.Engine)


def test_processor_output_reaches_the_engine_as_tensors(tmp_path):
    out = tmp_path / "result.json"
    res = run_lane("vl-video-processor", "--output", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "starting in-process sglang.Engine(model_path='Qwen/Qwen3-VL-8B-Instruct')" in res.stdout
    result = json.loads(out.read_text())
    assert result["status"] == "pass" and result["summary"]["requests"] == 3
    # the answer came from the pixels: frames decoded top-down, BGR swapped to RGB, tensors not lists
    assert {s["output"] for s in result["samples"]} <= {f"I see: square {c}" for c in
                                                       ("red", "green", "blue", "yellow", "purple", "orange")}
    assert result["summary"]["ttft_p50_s"] > 0 and result["samples"][0]["extra"]["prompt_tokens"] > 8


def test_processor_output_over_http_is_refused_with_the_reason():
    with StandIn() as server:
        res = run_lane("vl-video-processor", server=server)
        assert server.requests == []
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1
    assert "MediaRef, which refuses pixel_values_videos" in lines[0] and "drop --server-url" in lines[0]


def test_processor_mode_cannot_mix_with_http_styles():
    res = run_lane("vl-video-processor", "--video-input", "processor,path", "--dry-run")
    assert res.returncode != 0 and res.stderr.count("\n") == 1 and "cannot be mixed" in res.stderr


def test_engine_refusal_is_one_line():
    res = run_lane("vl-video-processor", env=subprocess_env(FAKE_PROCESSOR="bad-grid"))
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr
    assert "sglang.Engine.generate refused the processor output: ValueError: pixel_values_videos has" in lines[0]


def test_engine_that_does_not_start_is_one_line():
    res = run_lane("vl-video-processor", env=subprocess_env(FAKE_ENGINE="no-start"))
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1
    assert "sglang.Engine did not start: RuntimeError: Not enough memory" in lines[0] and "more" not in lines[0]


def test_missing_sglang_is_one_line_and_dry_run_needs_none(tmp_path):
    env = subprocess_env()
    env["PYTHONPATH"] = env["PYTHONPATH"].replace(str(FAKES / "engine"), str(tmp_path))
    res = run_lane("vl-video-processor", env=env)
    assert res.returncode == 2 and "in-process mode needs sglang on this machine" in res.stderr
    dry = run_lane("vl-video-processor", "--dry-run", env=env)
    assert dry.returncode == 0 and "engine: sglang.Engine(model_path='Qwen/Qwen3-VL-8B-Instruct')" in dry.stdout


def test_unloadable_processor_is_one_line():
    res = run_lane("vl-video-processor", env=subprocess_env(FAKE_PROCESSOR="missing-model"))
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr
    assert "cannot load the HF processor of Qwen/Qwen3-VL-8B-Instruct: OSError:" in lines[0]
    assert "more" not in lines[0]


def test_missing_transformers_skips_with_the_pip_command(tmp_path):
    shadow = tmp_path / "shadow"  # hides any installed transformers, so the test means the same everywhere
    (shadow / "transformers").mkdir(parents=True)
    (shadow / "transformers" / "__init__.py").write_text("raise ImportError('No module named transformers')\n")
    env = subprocess_env()
    env["PYTHONPATH"] = env["PYTHONPATH"].replace(str(FAKES / "hf"), str(shadow))
    res = run_lane("vl-video-processor", env=env)
    assert res.returncode == 0 and res.stderr == ""
    assert ("lane vl-video-processor: SKIPPED - --video-input processor needs transformers on the client: "
            "python -m pip install numpy 'transformers>=4.57'") in res.stdout


# -------------------------------------------------------------------- audio inside the video (Qwen3-Omni)


def test_audio_in_video_passes_only_when_the_server_hears_it(tmp_path):
    out = tmp_path / "hears.json"
    with StandIn(audio_in_video="hears") as server:
        res = run_lane("omni-audio-video", "--inputs", "audio-in-video", "--output", str(out), server=server)
        sent = server.requests[-1]
    assert res.returncode == 0, res.stdout + res.stderr
    words = {s["output"].split("The secret word is ")[-1].rstrip(".") for s in json.loads(out.read_text())["samples"]}
    assert len(words) == 3  # a new word per request: no cache can answer
    text = [p["text"] for p in sent["messages"][0]["content"] if p["type"] == "text"][0]
    assert sent["use_audio_in_video"] is True and "secret word" in text and not any(w in text for w in words)


def test_audio_in_video_fails_when_the_server_drops_the_track(tmp_path):
    out = tmp_path / "drops.json"
    with StandIn(audio_in_video="drops") as server:
        res = run_lane("omni-audio-video", "--output", str(out), server=server)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "lane omni-audio-video: FAIL" in res.stdout
    assert "did not hear the word: the server dropped the video's audio track" in res.stdout
    failed = [s for s in json.loads(out.read_text())["samples"] if not s["ok"]]
    assert failed and {s["mode"] for s in failed} == {"audio-in-video"}  # the separate audio part was heard


def test_audio_lane_without_speech_skips_instead_of_passing(tmp_path):
    env = subprocess_env()
    env["PATH"] = str(Path(sys.executable).parent)  # python, but no espeak-ng
    with StandIn() as server:
        res = run_lane("omni-audio-video", server=server, env=env)
        assert server.requests == []
    assert res.returncode == 0 and "SKIPPED - the secret word must be spoken: install espeak-ng" in res.stdout


def test_audio_file_needs_its_word(tmp_path):
    with StandIn() as server:
        res = run_lane("omni-audio-video", "--audio", str(tmp_path / "x.wav"), server=server)
    assert res.returncode != 0 and "--audio and --word go together" in res.stderr

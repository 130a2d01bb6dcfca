"""Every lane end to end against the stand-in server, plus the failure modes a GPU run can hit."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from lane_harness import subprocess_env  # noqa: E402
from standin_server import StandIn  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LANES = yaml.safe_load((ROOT / "playbook" / "lanes.yaml").read_text())["lanes"]
BY_ID = {lane["id"]: lane for lane in LANES}
# Keep the long-video lane quick: fewer frames, same code path; small frames keep processor output small.
FAST = {"vl-long-video-chunked": ["--frames", "24"], "asr-websocket-stream": ["--pace", "0"],
        "vl-video-processor": ["--frames", "4", "--size", "56"]}


def lane_env(**env: str) -> dict:
    """Environment for a lane script with the test fakes (tests/fakes); a PATH in `env` replaces theirs."""
    return dict(subprocess_env(), **env)


def run_lane(lane_id: str, *extra: str, server: StandIn | None = None, timeout: float = 60, env: dict | None = None):
    """The lane's script as a user runs it, with the test fakes (espeak-ng, transformers, sglang.Engine)."""
    lane = BY_ID[lane_id]
    in_process = "engine" in lane
    argv = [sys.executable, str(ROOT / lane["script"]), *lane.get("args", []), "--lane-id", lane_id,
            "--requests", "3", "--concurrency", "1" if in_process else "2", "--warmup", "1", *FAST.get(lane_id, [])]
    if server is not None:
        argv += ["--server-url", server.url]
        if server.ws_url and "websocket" in lane_id:
            argv += ["--ws-url", server.ws_url]
    return subprocess.run(argv + list(extra), capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else subprocess_env())


@pytest.mark.parametrize("lane_id", list(BY_ID))
def test_lane_passes_against_stand_in(lane_id, tmp_path):
    out = tmp_path / "result.json"
    in_process = "engine" in BY_ID[lane_id]
    with StandIn(websocket=True) as server:
        res = run_lane(lane_id, "--output", str(out), server=None if in_process else server)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"lane {lane_id}: PASS" in res.stdout
    result = json.loads(out.read_text())
    assert result["status"] == "pass" and result["lane"] == lane_id
    assert result["summary"]["requests"] == 3 and len(result["samples"]) == 3
    assert result["summary"]["latency_p50_s"] > 0 and result["summary"]["req_per_s"] > 0
    if lane_id.startswith("asr"):
        assert result["summary"]["wer"] == 0
        assert (result["summary"].get("ttft_p50_s") is None) == (lane_id == "asr-offline")
    if lane_id == "omni-speech":
        assert result["summary"]["ttfa_p50_s"] > 0 and result["summary"]["rtf_mean"] > 0
    # warm-up plus measured requests all reached the server (websocket lanes talk elsewhere)
    if lane_id != "asr-websocket-stream":
        assert len(server.requests) == (0 if in_process else 4)


def test_media_reach_the_server_as_sent():
    with StandIn() as server:
        res = run_lane("vl-multi-image", server=server)
        assert res.returncode == 0, res.stderr
        parts = server.requests[-1]["messages"][0]["content"]
        assert [p["type"] for p in parts] == ["image_url"] * 4 + ["text"]
        assert parts[0]["image_url"]["url"].startswith("data:image/png;base64,")
        res = run_lane("vl-video", server=server)
        urls = [r["messages"][0]["content"][0]["video_url"]["url"] for r in server.requests[-3:]]
        kinds = sorted(u.split(":", 1)[0] if not u.startswith("/") else "path" for u in urls)
        assert kinds == ["data", "http", "path"]  # one request per input style (concurrency 2: any order)
        res = run_lane("omni-audio-video", server=server)
        flags = [r.get("use_audio_in_video", False) for r in server.requests[-3:]]
        assert sorted(flags) == [False, False, True]


def test_slow_server_is_measured_and_passes(tmp_path):
    out = tmp_path / "slow.json"
    with StandIn(delay=0.3) as server:
        res = run_lane("vl-single-image", "--output", str(out), server=server)
    assert res.returncode == 0, res.stderr
    summary = json.loads(out.read_text())["summary"]
    assert summary["latency_p50_s"] >= 0.3 and summary["ttft_p50_s"] >= 0.3


@pytest.mark.parametrize("lane_id", ["vl-single-image", "asr-offline", "asr-http-stream", "omni-speech"])
def test_server_error_exits_nonzero_with_one_line(lane_id, tmp_path):
    out = tmp_path / "err.json"
    with StandIn(status=500) as server:
        res = run_lane(lane_id, "--output", str(out), server=server)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"lane {lane_id}: error:") and "HTTP 500" in lines[0]
    assert "Traceback" not in res.stdout + res.stderr
    assert json.loads(out.read_text())["status"] == "error"


@pytest.mark.parametrize("lane_id", ["vl-single-image", "vl-long-video-chunked", "omni-audio-video",
                                     "asr-offline", "asr-http-stream", "asr-websocket-stream", "omni-speech"])
def test_wrong_answer_fails_the_check(lane_id, tmp_path):
    out = tmp_path / "wrong.json"
    with StandIn(wrong=True, websocket=True) as server:
        res = run_lane(lane_id, "--output", str(out), server=server)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"lane {lane_id}: FAIL" in res.stdout
    assert json.loads(out.read_text())["check"]["passed"] is False


def test_unreachable_server_is_one_line_at_once():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = __import__("time").monotonic()
    res = run_lane("asr-offline", "--server-url", f"http://127.0.0.1:{port}")  # 30 s of polling before
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "connection refused" in res.stderr
    assert __import__("time").monotonic() - started < 20


def test_a_result_says_what_ran(tmp_path):
    out = tmp_path / "result.json"
    state = tmp_path / "smi"
    env = lane_env(PATH=f"{ROOT / 'tests' / 'fakes' / 'gpu'}{os.pathsep}{lane_env()['PATH']}", FAKE_SMI_STATE=str(state))
    with StandIn(version="0.5.23.dev7+g1a2b3c4d5e6f") as server:
        res = run_lane("vl-video", "--output", str(out), "--gpu-memory", "--server-cmd",
                       "python -m sglang.launch_server --model-path {model} --port {port}", server=server, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads(out.read_text())
    assert result["gpu"] == {"present": True, "count": 2, "model": "NVIDIA H200", "driver": "570.124.06", "cuda": "12.8",
                             "gpus": [{"name": "NVIDIA H200", "memory_total_mib": 143771, "driver": "570.124.06"}] * 2}
    assert result["server"]["version"] == "0.5.23.dev7+g1a2b3c4d5e6f" and result["server"]["commit"] == "1a2b3c4d5e6f"
    assert result["server"]["source"] == "/server_info"
    assert result["server"]["command"] == "python -m sglang.launch_server --model-path Qwen/Qwen3-VL-8B-Instruct --port 30000"
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert result["lane_commit"]["commit"] == commit
    summary = result["summary"]
    assert summary["gpu_memory_peak_mib"] >= 2000 and summary["gpu_memory_peak_per_gpu_mib"]["1"] == 500
    assert summary["undersampled"] == ["latency_p10_s", "latency_p90_s", "latency_p99_s", "ttft_p10_s", "ttft_p90_s",
                                       "ttft_p99_s"]  # 3 requests: only p50 is a percentile
    assert "latency_p99_s" in res.stdout and "(too few samples: 3 < 100)" in res.stdout


def test_without_nvidia_smi_the_result_says_no_gpu(tmp_path):
    out = tmp_path / "result.json"
    env = lane_env(PATH=str(ROOT / "tests" / "fakes" / "bin"))  # no nvidia-smi, even on a GPU machine
    with StandIn() as server:
        res = run_lane("vl-single-image", "--output", str(out), "--gpu-memory", server=server, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads(out.read_text())
    assert result["gpu"] == {"present": False} and result["server"]["command"] is None
    assert result["summary"]["gpu_memory_peak_mib"] is None


def test_lane_help_shows_every_default():
    res = subprocess.run([sys.executable, str(ROOT / "playbook/lanes/vl_image.py"), "-h"], capture_output=True,
                         text=True, env=lane_env())
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    for flag, default in (("--requests", "8"), ("--concurrency", "1"), ("--warmup", "1"), ("--port", "30000")):
        assert re.search(rf"{flag} \S+ .*?\(default: {default}\)", text), flag


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_launch_waits_for_health_then_runs(tmp_path):
    cmd = f"{sys.executable} {ROOT / 'tests' / 'standin_server.py'} --port {{port}}"
    res = run_lane("asr-offline", "--launch", "--server-cmd", cmd, "--port", str(_free_port()),
                   "--health-timeout", "20", "--log-dir", str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "launching: " in res.stdout and "PASS" in res.stdout


def test_launch_never_healthy_times_out_cleanly(tmp_path):
    cmd = f"{sys.executable} -c 'import time; time.sleep(60)'"
    res = run_lane("vl-single-image", "--launch", "--server-cmd", cmd, "--port", str(_free_port()),
                   "--health-timeout", "0.5", "--log-dir", str(tmp_path), timeout=30)
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line and "did not become healthy within 0.5s" in line and "server.log" in line


def test_launch_of_a_crashing_server_says_so(tmp_path):
    cmd = f"{sys.executable} -c 'import sys; sys.exit(3)'"
    res = run_lane("omni-speech", "--launch", "--server-cmd", cmd, "--port", str(_free_port()),
                   "--log-dir", str(tmp_path))
    assert res.returncode == 2 and "server exited with code 3" in res.stderr


def test_compare_prints_the_pr_table(tmp_path):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    # The "before" server answers 0.6 s late: far more than the undelayed run's own latency
    # ever reaches on a loaded machine (0.2 s did not always suffice), so "better" is certain.
    with StandIn(delay=0.6) as server:
        assert run_lane("asr-http-stream", "--output", str(before), server=server).returncode == 0
    with StandIn() as server:
        assert run_lane("asr-http-stream", "--output", str(after), server=server).returncode == 0
    lane = BY_ID["asr-http-stream"]
    res = subprocess.run([sys.executable, str(ROOT / lane["script"]), "--compare", str(before), str(after)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    rows = {line.split("|")[1].strip(): line for line in res.stdout.splitlines() if line.startswith("| ")}
    assert "latency p50 (s)" in rows and "TTFT p50 (s)" in rows and "WER" in rows and "throughput (req/s)" in rows
    assert "better" in rows["latency p50 (s)"] and "-" in rows["latency p50 (s)"].split("|")[4]
    assert "better" in rows["throughput (req/s)"]


def test_compare_with_a_missing_file_is_one_line(tmp_path):
    res = subprocess.run([sys.executable, str(ROOT / "playbook/lanes/asr_offline.py"), "--compare",
                          str(tmp_path / "a.json"), str(tmp_path / "b.json")], capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "cannot read result" in res.stderr


@pytest.mark.parametrize("lane_id", list(BY_ID))
def test_dry_run_prints_plan_without_network(lane_id):
    lane = BY_ID[lane_id]
    res = subprocess.run([sys.executable, str(ROOT / lane["script"]), *lane.get("args", []), "--dry-run"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    assert ("engine: " if "engine" in lane else "server: ") in res.stdout and "request: " in res.stdout


def test_lane_needs_a_server_or_dry_run():
    res = subprocess.run([sys.executable, str(ROOT / "playbook/lanes/vl_image.py")], capture_output=True, text=True)
    assert res.returncode == 2 and "--server-url" in res.stderr


def test_generated_media_decode_as_their_formats():
    sys.path.insert(0, str(ROOT / "playbook" / "lanes"))
    import _audio
    import _media
    import _scoring

    png = _media.png_image("circle", "red", 64)
    assert png.startswith(b"\x89PNG") and b"LANE-TRUTH:red circle;" in png
    frames = _media.moving_square_frames(["red", "blue"], 4, 32)
    avi = _media.avi_video(frames, 32, 32, 2, "square red then blue", audio=_audio.tone_pcm(1.0), audio_rate=16000)
    assert avi[8:12] == b"AVI " and _media.avi_frames(avi) == frames
    pcm, rate = _audio.wav_pcm(_audio.wav_bytes(_audio.tone_pcm(0.5), 16000, "x"))
    assert rate == 16000 and len(pcm) == 16000
    assert len(_audio.resample(pcm, 16000, 24000)) == 24000
    assert _scoring.word_error_rate("the cat sat", "the cat sat") == 0
    assert _scoring.word_error_rate("the cat sat", "a dog sat") == pytest.approx(2 / 3)


def test_dry_run_into_a_closed_pipe_stops_quietly():
    # `dossier lanes run ID -- --dry-run | head`: the reader is gone before the plan is printed.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        res = subprocess.run([sys.executable, str(ROOT / "playbook/lanes/vl_video.py"), "--dry-run"],
                             stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=30)
    finally:
        os.close(write_end)
    assert res.returncode == 141 and res.stderr == ""


@pytest.mark.parametrize("script, flag, good", [("vl_video.py", "--video-input", "path"),
                                               ("omni_av.py", "--inputs", "audio+video")])
def test_unknown_input_style_is_one_line(script, flag, good):
    res = subprocess.run([sys.executable, str(ROOT / "playbook/lanes" / script), flag, f"{good},bogus", "--dry-run"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode != 0 and res.stdout.count("request: ") == 0
    assert res.stderr.count("\n") == 1 and f"unknown {flag} ['bogus']" in res.stderr


def test_an_entry_that_asks_for_gpu_memory_turns_sampling_on():
    from click.testing import CliRunner

    from dossier.cli import main

    res = CliRunner().invoke(main, ["lanes", "run", "vl-video", "--entry", "vl-video-oom", "--root", str(ROOT),
                                    "--", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "--gpu-memory" in res.output.splitlines()[0]
    res = CliRunner().invoke(main, ["lanes", "run", "asr-offline", "--entry", "vl-video-oom", "--root", str(ROOT)])
    assert res.exit_code == 2 and "does not name lane asr-offline" in res.output


@pytest.mark.parametrize("lane_id, extra, says", [
    ("vl-long-video-chunked", [], "the same generated 192-frame clip every request (--long"),
    ("vl-video", [], "distinct generated media per request"),
    ("omni-speech", [], "no media; a generated sentence per request"),
    ("omni-speech", ["--repeat-media"], "no media; the same sentence every request (--repeat-media)"),
])
def test_dry_run_media_line_says_what_differs_between_requests(lane_id, extra, says):
    # --long pins every request to one clip; omni-speech sends sentences, not media.
    lane = BY_ID[lane_id]
    res = subprocess.run([sys.executable, str(ROOT / lane["script"]), *lane.get("args", []), *extra, "--dry-run"],
                         capture_output=True, text=True, timeout=30)
    media = [l for l in res.stdout.splitlines() if l.startswith("media: ")]
    assert res.returncode == 0 and media and media[0].startswith("media: " + says), res.stdout

"""The omni-speech lane against the stand-in: per-chunk arrival, seam continuity, speech WER through a
transcription server, the raw PCM speech stream, GPU placements and launching from --omni-root."""

from __future__ import annotations

import json
import math
import shlex
import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from standin_server import StandIn  # noqa: E402
from test_lanes import ROOT, lane_env, run_lane  # noqa: E402

sys.path.insert(0, str(ROOT / "playbook" / "lanes"))
import _seams  # noqa: E402

LANE = "omni-speech"
SCRIPT = ROOT / "playbook" / "lanes" / "omni_speech.py"


def run(*extra: str, server: StandIn, out: Path) -> tuple[subprocess.CompletedProcess, dict]:
    res = run_lane(LANE, "--output", str(out), *extra, server=server)
    return res, json.loads(out.read_text()) if out.exists() else {}


def tone(n: int, rate: int = 24000, hz: float = 250, amplitude: int = 8000, shift: int = 0) -> bytes:
    return struct.pack(f"<{n}h", *(int(amplitude * math.sin(2 * math.pi * hz * (i + shift) / rate)) for i in range(n)))


# ----------------------------------------------------------------------------- the seam metric itself


def test_seam_score_stays_near_one_on_a_continuous_wave_and_jumps_at_a_click():
    wave = tone(25000)
    chunks = [wave[i:i + 10000] for i in range(0, len(wave), 10000)]  # 5000-sample chunks: joins at any phase
    assert len(chunks) == 5 and max(_seams.seam_scores(chunks)) < 1.5  # at most a normal step
    clicked = chunks[:2] + [tone(5000, shift=10000 + 24)] + chunks[3:]  # the third chunk runs a quarter period ahead
    scores = _seams.seam_scores(clicked)
    assert min(scores[1], scores[2]) > 4 and max(scores[0], scores[3]) < 1.5  # 4: the default --max-seam
    assert _seams.seam_scores([b"\0\0" * 100, b"\0\0" * 100]) == [0.0]  # silence stays silent
    assert _seams.seam_scores([wave]) == []


def test_stalls_count_chunks_that_arrive_after_playback_ran_dry():
    pcm = b"\0\0" * 2400  # 0.1 s at 24 kHz
    on_time = [_seams.Chunk(0.5 + k * 0.05, pcm, 24000) for k in range(4)]
    assert _seams.stalls(on_time) == (0, 0.0)
    late = [_seams.Chunk(t, pcm, 24000) for t in (0.5, 0.6, 0.9, 0.95)]
    count, waited = _seams.stalls(late)
    assert count == 1 and waited == pytest.approx(0.2)


# ----------------------------------------------------------------------------- end to end


def test_per_chunk_arrival_first_audio_and_stalls(tmp_path):
    with StandIn(audio_delay=0.5, serves="sglang-omni") as server:
        res, result = run("--requests", "2", "--warmup", "0", server=server, out=tmp_path / "r.json")
    assert res.returncode == 0, res.stdout + res.stderr
    for sample in result["samples"]:
        arrivals = sample["extra"]["chunk_at_s"]
        assert len(arrivals) == sample["extra"]["chunks"] >= 4
        assert arrivals == sorted(arrivals) and all(t >= 0.5 * (k + 1) for k, t in enumerate(arrivals))
        assert sample["ttfa"] == pytest.approx(arrivals[0], abs=1e-3) and sample["extra"]["chunk_seconds"][0] == pytest.approx(0.4)
        assert sample["extra"]["stalls"] >= 1  # 0.4 s chunks every 0.5 s cannot play without waiting
    assert result["summary"]["ttfa_p50_s"] >= 0.5 and result["summary"]["stalls"] >= 2


def test_a_click_between_chunks_fails_the_seam_check(tmp_path):
    with StandIn(serves="sglang-omni") as server:
        res, result = run(server=server, out=tmp_path / "ok.json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert result["summary"]["seam_worst"] < 1.5 and "worst seam" in result["check"]["message"]
    with StandIn(seam_glitch=True, serves="sglang-omni") as server:
        res, result = run(server=server, out=tmp_path / "click.json")
    assert res.returncode == 1 and "lane omni-speech: FAIL - seam score" in res.stdout
    assert "at join 1 of request" in result["check"]["message"] and result["summary"]["seam_worst"] > 10


@pytest.mark.parametrize("endpoint", ["chat", "speech"])
def test_the_555_sample_gap_of_1355_fails_the_seam_check_and_the_fix_passes(tmp_path, endpoint):
    """Before sglang-omni #1355 every streamed Code2Wav chunk lost its last 555 samples (the causal
    transposed convs' right trim) while the next chunk started on time: a jump at every join."""
    with StandIn(seam_gap=555) as server:
        res, result = run("--endpoint", endpoint, server=server, out=tmp_path / "gap.json")
    assert res.returncode == 1 and "lane omni-speech: FAIL - seam score" in res.stdout
    assert result["summary"]["seam_worst"] > 4.0
    with StandIn() as server:  # the fix: every chunk whole, the stream contiguous
        res, result = run("--endpoint", endpoint, server=server, out=tmp_path / "fixed.json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert result["summary"]["seam_worst"] < 1.5


def test_speech_wer_through_a_transcription_server(tmp_path):
    with StandIn(serves="sglang-omni") as server:  # the stand-in hears back exactly the audio it spoke
        res, result = run("--asr-url", server.url, server=server, out=tmp_path / "r.json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert result["summary"]["speech_wer"] == 0 and "speech WER 0.000" in result["check"]["message"]
    with StandIn(serves="sglang-omni") as server, StandIn(transcript="something else entirely") as asr:
        res, result = run("--asr-url", asr.url + "/v1/audio/transcriptions", server=server, out=tmp_path / "w.json")
        uploads = asr.requests
    assert res.returncode == 1 and "speech WER" in result["check"]["message"]
    assert "heard as 'something else entirely'" in result["check"]["message"] and result["summary"]["speech_wer"] > 0.5
    assert [u["model"] for u in uploads] == ["qwen3-asr"] * 3  # one upload per measured reply, none for warm-up


def test_unreachable_asr_server_is_one_line(tmp_path):
    with StandIn(serves="sglang-omni") as server:
        res, result = run("--asr-url", "http://127.0.0.1:9", server=server, out=tmp_path / "r.json")
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "cannot reach http://127.0.0.1:9" in lines[0]
    assert result["status"] == "error"


def test_speech_endpoint_streams_raw_pcm(tmp_path):
    with StandIn(serves="sglang-omni") as server:
        res, result = run("--endpoint", "speech", "--asr-url", server.url, server=server, out=tmp_path / "r.json")
        sent = [r for r in server.requests if "input" in r][-1]  # the last speech request (not an ASR upload)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sent["stream"] is True and sent["response_format"] == "pcm"
    sample = result["samples"][0]
    assert sum(sample["extra"]["chunk_seconds"]) == pytest.approx(1.5) and sample["ttfa"] > 0
    assert result["summary"]["speech_wer"] == 0 and result["summary"]["seam_worst"] < 1.5


def test_each_request_says_a_sentence_of_its_own(tmp_path):
    with StandIn(serves="sglang-omni") as server:
        res, result = run(server=server, out=tmp_path / "r.json")
    said = [s["extra"]["sentence"] for s in result["samples"]]
    assert res.returncode == 0 and len(set(said)) == 3


# ----------------------------------------------------------------------------- placement and launch


def dry_run(*extra: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--dry-run", *extra], capture_output=True, text=True,
                          timeout=30, env=lane_env(**env))


@pytest.mark.parametrize("gpus, version, flags", [
    ("1", None, ["--config", "examples/configs/qwen3_omni_colocated_h200.yaml", "--colocate"]),
    ("1", "0.1.9", ["--config", "examples/configs/qwen3_omni_colocated_h200.yaml", "--colocate"]),
    ("2", None, ["--thinker-tp-size", "2", "--thinker-gpus", "0,1", "--talker-gpu", "1", "--code2wav-gpu", "0",
                 "--thinker-mem-fraction-static", "0.55", "--talker-mem-fraction-static", "0.21"]),
    ("2", "0.1.9", ["--thinker.tp_size", "2", "--thinker.gpu", "[0,1]", "--talker_ar.gpu", "1", "--code2wav.gpu", "0",
                    "--thinker.engine.mem_fraction_static", "0.55", "--talker_ar.engine.mem_fraction_static", "0.21"]),
    ("3", "0.1.3", ["--thinker-tp-size", "2", "--thinker-gpus", "0,1", "--talker-gpu", "2", "--code2wav-gpu", "0"]),
    ("3", "0.1.4", ["--thinker.tp_size", "2", "--thinker.gpu", "[0,1]", "--talker_ar.gpu", "2", "--code2wav.gpu", "0"]),
])
def test_gpu_count_picks_a_placement(gpus, version, flags):
    res = dry_run("--gpus", gpus, *(["--omni-version", version] if version else []))
    assert res.returncode == 0, res.stderr
    server = next(line for line in res.stdout.splitlines() if line.startswith("server: "))
    words = shlex.split(server.removeprefix("server: "))
    assert words[:2] == ["sgl-omni", "serve"] and words[-len(flags):] == flags
    assert f"placement: {gpus} GPU(s): " in res.stdout
    assert f"flags spelt for sglang-omni {version or '0.1.3'} (" in res.stdout


def test_more_gpus_than_a_placement_is_refused():
    res = dry_run("--gpus", "4")
    assert res.returncode == 2 and "invalid choice: 4" in res.stderr


def test_launch_needs_an_sglang_omni_checkout(tmp_path):
    res = subprocess.run([sys.executable, str(SCRIPT), "--launch"], capture_output=True, text=True, timeout=30,
                         env=lane_env(SGLANG_OMNI_ROOT=""))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--omni-root" in res.stderr
    res = subprocess.run([sys.executable, str(SCRIPT), "--launch", "--omni-root", str(tmp_path)],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and "not an sglang-omni checkout" in res.stderr
    (tmp_path / "sglang_omni" / "cli").mkdir(parents=True)
    (tmp_path / "sglang_omni" / "cli" / "serve.py").write_text("")
    res = subprocess.run([sys.executable, str(SCRIPT), "--launch", "--omni-root", str(tmp_path), "--gpus", "1"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and "--gpus 1 needs examples/configs/qwen3_omni_colocated_h200.yaml" in res.stderr
    assert f"cwd: {tmp_path}" in dry_run("--omni-root", str(tmp_path)).stdout
    assert "cwd: " + str(tmp_path) in dry_run(SGLANG_OMNI_ROOT=str(tmp_path)).stdout


FAKE_LAUNCHER = """#!{python}
import json, os, sys
sys.path.insert(0, {tests!r})
json.dump({{"cwd": os.getcwd(), "argv": sys.argv}}, open(os.path.join({record!r}), "w"))
port = sys.argv[sys.argv.index("--port") + 1]
sys.argv = ["standin_server.py", "--port", port]
import runpy
runpy.run_path(os.path.join({tests!r}, "standin_server.py"), run_name="__main__")
"""


def test_launch_runs_sgl_omni_serve_inside_the_omni_root(tmp_path):
    """`sgl-omni serve` runs in the checkout, spelt for the checkout's version (0.1.9: dotted overrides)."""
    root, record, elsewhere, bin_dir = (tmp_path / "sglang-omni", tmp_path / "launched.json", tmp_path / "elsewhere",
                                        tmp_path / "bin")
    (root / "sglang_omni" / "cli").mkdir(parents=True)
    (root / "sglang_omni" / "cli" / "serve.py").write_text("")
    (root / "sglang_omni" / "__init__.py").write_text('__version__ = "0.1.9"\n')
    elsewhere.mkdir()
    bin_dir.mkdir()
    cli = bin_dir / "sgl-omni"  # what `pip install -e .` of the checkout puts on PATH
    cli.write_text(FAKE_LAUNCHER.format(python=sys.executable, tests=str(Path(__file__).parent), record=str(record)))
    cli.chmod(0o755)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = subprocess.run([sys.executable, str(SCRIPT), "--launch", "--omni-root", str(root), "--port", str(port),
                          "--requests", "1", "--warmup", "0", "--health-timeout", "20", "--log-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=60, cwd=elsewhere,
                         env=lane_env(PATH=f"{bin_dir}:/usr/bin:/bin"))
    log = tmp_path / "server.log"
    assert res.returncode == 0, res.stdout + res.stderr + (log.read_text() if log.exists() else "")
    launched = json.loads(record.read_text())
    assert launched["cwd"] == str(root) and launched["argv"][1] == "serve"
    assert launched["argv"][-6:] == ["--code2wav.gpu", "0", "--thinker.engine.mem_fraction_static", "0.55",
                                     "--talker_ar.engine.mem_fraction_static", "0.21"]

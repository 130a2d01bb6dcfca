"""Realistic lane workloads against the stand-in: media of its own per request, --repeat-media,
--media-dir, long ASR clips, espeak-ng required for WER, and --compare's percentiles."""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from standin_server import StandIn  # noqa: E402
from test_lanes import ROOT, lane_env, run_lane  # noqa: E402

sys.path.insert(0, str(ROOT / "playbook" / "lanes"))
import _audio  # noqa: E402
import _media  # noqa: E402
import _results  # noqa: E402


def png_pixels(data_url: str) -> bytes:
    data = base64.b64decode(data_url.split(",", 1)[1])
    pos, idat = 8, b""
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + size]
        pos += 12 + size
    return zlib.decompress(idat)


def image_urls(server: StandIn) -> list[str]:
    return [p["image_url"]["url"] for r in server.requests for p in r["messages"][0]["content"]
            if p["type"] == "image_url"]


def one_error_line(res, *words: str) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and all(w in lines[0] for w in words), lines[0]
    return lines[0]


# ----------------------------------------------------------------------------- generated media


def test_every_request_gets_pixels_of_its_own_unless_repeat_media():
    with StandIn() as server:
        assert run_lane("vl-multi-image", server=server).returncode == 0
        urls = image_urls(server)
    assert len(urls) == 16 and len({png_pixels(u) for u in urls}) == 16  # 4 requests x 4 images
    with StandIn() as server:
        assert run_lane("vl-single-image", "--repeat-media", server=server).returncode == 0
        assert len(set(image_urls(server))) == 1


def test_the_seed_fixes_the_media():
    runs = {}
    for seed in ("7", "7", "8"):
        with StandIn() as server:
            assert run_lane("vl-single-image", "--seed", seed, server=server).returncode == 0
            runs.setdefault(seed, []).append(image_urls(server))
    assert set(runs["7"][0]) == set(runs["7"][1]) and not set(runs["7"][0]) & set(runs["8"][0])  # any order


def test_videos_differ_per_request_and_repeat_on_request():
    def first_frames(*extra):
        with StandIn() as server:
            assert run_lane("vl-video", "--video-input", "data-url", *extra, server=server).returncode == 0
            urls = [r["messages"][0]["content"][0]["video_url"]["url"] for r in server.requests]
        return [_media.avi_frames(base64.b64decode(u.split(",", 1)[1]))[0] for u in urls]

    assert len(set(first_frames())) == 4
    assert len(set(first_frames("--repeat-media"))) == 1


def test_asr_clips_and_references_differ_per_request(tmp_path):
    out = tmp_path / "r.json"
    with StandIn() as server:
        assert run_lane("asr-offline", "--output", str(out), server=server).returncode == 0
    refs = [s["extra"]["reference"] for s in json.loads(out.read_text())["samples"]]
    assert len(set(refs)) == 3 and all(len(r.split()) >= 10 for r in refs)
    with StandIn() as server:
        assert run_lane("asr-offline", "--repeat-media", "--output", str(out), server=server).returncode == 0
    assert len({s["extra"]["reference"] for s in json.loads(out.read_text())["samples"]}) == 1


@pytest.mark.parametrize("lane_id", ["asr-offline", "asr-websocket-stream"])
def test_long_asr_clips_join_sentences_to_the_asked_length(lane_id, tmp_path):
    out = tmp_path / "r.json"
    with StandIn(websocket=True) as server:
        res = run_lane(lane_id, "--clip-seconds", "30", "--output", str(out), server=server)
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads(out.read_text())
    assert result["summary"]["wer"] == 0  # the server heard every sentence of every clip
    for sample in result["samples"]:
        assert sample["audio_seconds"] == pytest.approx(30.0, abs=0.01)
        assert len(sample["extra"]["reference"].split()) > 60  # several generated sentences


def test_clip_length_range_is_drawn_per_request(tmp_path):
    out = tmp_path / "r.json"
    with StandIn() as server:
        assert run_lane("asr-offline", "--clip-seconds", "10-20", "--output", str(out), server=server).returncode == 0
    seconds = [s["audio_seconds"] for s in json.loads(out.read_text())["samples"]]
    assert all(10 <= s <= 20 for s in seconds) and len(set(seconds)) > 1


@pytest.mark.parametrize("value", ["121", "0", "abc", "20-10"])
def test_bad_clip_seconds_is_one_line(value):
    res = run_lane("asr-offline", "--clip-seconds", value, "--dry-run")
    one_error_line(res, "--clip-seconds")


# ----------------------------------------------------------------------------- no synthesizer, no WER


def test_asr_refuses_to_score_wer_without_espeak(tmp_path):
    with StandIn() as server:
        res = run_lane("asr-offline", server=server, env=lane_env(PATH=str(tmp_path)))
        assert server.requests == []
    one_error_line(res, "espeak-ng", "--media-dir")
    res = run_lane("asr-http-stream", server=None, env=lane_env(PATH=str(tmp_path)), *("--server-url", "http://x"))
    one_error_line(res, "espeak-ng")


def test_real_espeak_ng_speaks_the_clips(tmp_path):
    """The tests above use fakes/bin/espeak-ng; this one the real synthesizer, which .ci/run installs."""
    real = shutil.which("espeak-ng")
    if not real:
        if os.environ.get("DOSSIER_REQUIRE_ESPEAK"):
            raise RuntimeError("DOSSIER_REQUIRE_ESPEAK is set but espeak-ng is not on PATH (apt-get install espeak-ng)")
        pytest.skip("espeak-ng is not installed; set DOSSIER_REQUIRE_ESPEAK=1 to make this a failure")
    pcm = _audio.synthesize(real, "the quick brown fox jumps over the lazy dog", 16000)
    samples = struct.unpack(f"<{len(pcm) // 2}h", pcm)
    assert 1.0 < len(samples) / 16000 < 6 and max(map(abs, samples)) > 2000  # seconds of audible speech
    out = tmp_path / "r.json"
    with StandIn() as server:  # PATH without tests/fakes/bin: the lane finds the real espeak-ng
        res = run_lane("asr-offline", "--clip-seconds", "12", "--output", str(out), server=server,
                       env=lane_env(PATH=os.environ.get("PATH", "")))
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads(out.read_text())
    assert result["summary"]["speech_source"] == "espeak-ng"
    assert all(s["audio_seconds"] == 12.0 for s in result["samples"])


def test_a_broken_espeak_is_one_line():
    with StandIn() as server:
        res = run_lane("asr-offline", server=server, env=lane_env(FAKE_ESPEAK_FAIL="1"))
    one_error_line(res, "could not synthesize", "cannot open voice")


def test_audio_without_reference_is_refused():
    one_error_line(run_lane("asr-offline", "--audio", "x.wav", "--dry-run"), "--reference")


# ----------------------------------------------------------------------------- the user's own files


def write_wav(path: Path, words: str) -> None:
    path.write_bytes(_audio.wav_bytes(_audio.tone_pcm(1.0), 16000, words))
    path.with_suffix(".txt").write_text(words + "\n")


def test_media_dir_audio_replays_recordings_with_their_transcripts(tmp_path):
    media = tmp_path / "media"
    media.mkdir()
    write_wav(media / "a.wav", "hello there general kenobi")
    write_wav(media / "b.wav", "good morning to you")
    out = tmp_path / "r.json"
    with StandIn() as server:  # no espeak-ng on PATH: real recordings do not need it
        res = run_lane("asr-offline", "--media-dir", str(media), "--output", str(out), server=server,
                       env=lane_env(PATH=str(tmp_path)))
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads(out.read_text())
    assert [s["extra"]["reference"] for s in result["samples"]] == [
        "hello there general kenobi", "good morning to you", "hello there general kenobi"]
    assert result["summary"]["wer"] == 0 and result["summary"]["speech_source"] == "file"


def test_media_dir_audio_needs_a_transcript_per_file(tmp_path):
    write_wav(tmp_path / "a.wav", "hello")
    (tmp_path / "b.wav").write_bytes((tmp_path / "a.wav").read_bytes())
    with StandIn() as server:
        res = run_lane("asr-offline", "--media-dir", str(tmp_path), server=server)
    one_error_line(res, "no transcript for b.wav", "b.txt")


def test_media_dir_images_cycle_and_are_checked_against_their_words(tmp_path):
    for name, colour in (("a", "red"), ("b", "blue")):
        (tmp_path / f"{name}.png").write_bytes(_media.png_image("circle", colour, 64))
        (tmp_path / f"{name}.txt").write_text(colour)
    with StandIn() as server:
        # one request at a time: the server sees them in index order
        res = run_lane("vl-single-image", "--media-dir", str(tmp_path), "--concurrency", "1", server=server)
        assert res.returncode == 0, res.stdout + res.stderr
        sent = [base64.b64decode(u.split(",", 1)[1]) for u in image_urls(server)]
    files = [(tmp_path / n).read_bytes() for n in ("a.png", "b.png")]
    # the warm-up (index -1) goes first; the measured requests (0, 1, 2) run concurrently, so any order
    assert sent[0] == files[1] and sorted(sent[1:]) == sorted([files[0], files[1], files[0]])
    (tmp_path / "a.txt").write_text("purple")
    with StandIn() as server:
        res = run_lane("vl-single-image", "--media-dir", str(tmp_path), server=server)
    assert res.returncode == 1 and "missing ['purple']" in res.stdout


def test_media_dir_videos_play_in_every_url_style(tmp_path):
    frames = _media.moving_square_frames(["green"], 4, 56)
    (tmp_path / "clip.avi").write_bytes(_media.avi_video(frames, 56, 56, 2, "square green"))
    (tmp_path / "clip.txt").write_text("green")
    with StandIn() as server:
        res = run_lane("vl-video", "--media-dir", str(tmp_path), server=server)
    assert res.returncode == 0, res.stdout + res.stderr
    one_error_line(run_lane("vl-video-processor", "--media-dir", str(tmp_path), "--dry-run"), "processor")


def test_an_empty_media_dir_is_one_line(tmp_path):
    with StandIn() as server:
        res = run_lane("vl-single-image", "--media-dir", str(tmp_path), server=server)
    one_error_line(res, "no image files")


# ----------------------------------------------------------------------------- --compare


def result(latencies: list[float], ttft: list[float]) -> dict:
    return {"lane": "x", "summary": {"req_per_s": 1.0}, "config": {"requests": len(latencies), "concurrency": 1},
            "samples": [{"latency": lat, "ttft": t, "extra": {}} for lat, t in zip(latencies, ttft)]}


def test_compare_shows_p50_p90_p99_and_says_when_the_spreads_overlap():
    before = result([1.0 + i / 10 for i in range(10)], [0.5 + i / 100 for i in range(10)])
    after = result([0.5 + i / 100 for i in range(10)], [0.52 + i / 100 for i in range(10)])
    table = _results.compare_table(before, after)
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    for q in ("p50", "p90", "p99 *"):  # 10 samples: p99 is only the largest one, and is marked so
        assert "better" in rows[f"latency {q} (s)".replace(" * (s)", " (s) *")]
        assert "noise" not in rows[f"latency {q} (s)".replace(" * (s)", " (s) *")]
        assert "within noise" in rows[f"TTFT {q} (s)".replace(" * (s)", " (s) *")]
    assert float(rows["latency p99 (s) *"].split("|")[2]) == pytest.approx(1.891)
    notes = [line for line in table.splitlines() if line.startswith("Note: ")]
    assert len(notes) == 2 and notes[0].startswith("Note: * too few samples for this percentile (p99 needs 100; "
                                                   "before has 10, after 10)")
    assert notes[1].startswith("Note: TTFT: the p10-p90 spreads overlap") and "within noise" in notes[1]

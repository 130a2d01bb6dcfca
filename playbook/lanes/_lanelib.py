"""Shared machinery for the GPU validation lanes (stdlib only; optional extras imported lazily).

A lane script subclasses `Lane`, fills in the server command, the requests and the
correctness check, and calls `main(MyLane())`. This module then gives every lane the
same CLI: --dry-run, --launch, --server-url, --requests/--concurrency/--warmup,
--output and --compare. It must run on a GPU box that has sglang but not the dossier
package, so it imports nothing outside the standard library at module level.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import re
import shlex
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

# Media we generate carry this marker so a stand-in server can answer without a model;
# real models never see it (PNG tEXt / RIFF INFO metadata).
TRUTH_MARK = "LANE-TRUTH:"
TONE_TRANSCRIPT = "the quick brown fox jumps over the lazy dog"
COLOURS = {
    "red": (220, 30, 30), "green": (30, 160, 60), "blue": (30, 60, 220),
    "yellow": (240, 200, 20), "purple": (130, 40, 160), "orange": (245, 130, 20),
}
SHAPES = ("circle", "square", "triangle")
EXIT_FAIL, EXIT_ERROR = 1, 2


class LaneError(Exception):
    """Server or environment failure: reported as one line, exit 2."""


class LaneSkip(Exception):
    """A mode that cannot run here (missing optional tool); reported, not failed."""


# --------------------------------------------------------------------------- media


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def shape_span(shape: str, y: int, size: int) -> tuple[int, int] | None:
    """Columns [x0, x1) the shape covers on row y of a size x size canvas (centred)."""
    c, r = size / 2, size * 0.3
    if shape == "square":
        return (int(c - r), int(c + r)) if abs(y - c) <= r else None
    if shape == "circle":
        dy = y - c
        if abs(dy) > r:
            return None
        dx = math.sqrt(r * r - dy * dy)
        return int(c - dx), int(c + dx)
    top, bottom = c - r, c + r  # triangle pointing up
    if not top <= y <= bottom:
        return None
    half = (y - top) / (bottom - top) * r
    return int(c - half), int(c + half)


def png_image(shape: str, colour: str, size: int = 448) -> bytes:
    """A white square PNG with one coloured shape; the truth rides in a tEXt chunk."""
    white, ink = bytes((255, 255, 255)), bytes(COLOURS[colour])
    rows = []
    for y in range(size):
        row = bytearray(white * size)
        span = shape_span(shape, y, size)
        if span:
            row[span[0] * 3:span[1] * 3] = ink * (span[1] - span[0])
        rows.append(b"\x00" + bytes(row))
    ihdr = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    text = b"Comment\x00" + f"{TRUTH_MARK}{colour} {shape};".encode()
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"tEXt", text)
            + _png_chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + _png_chunk(b"IEND", b""))


def _riff_chunk(fourcc: bytes, data: bytes) -> bytes:
    return fourcc + struct.pack("<I", len(data)) + data + (b"\x00" if len(data) % 2 else b"")


def _riff_list(kind: bytes, body: bytes) -> bytes:
    return _riff_chunk(b"LIST", kind + body)


def _info(truth: str) -> bytes:
    return _riff_list(b"INFO", _riff_chunk(b"ICMT", f"{TRUTH_MARK}{truth};".encode() + b"\x00"))


def wav_bytes(pcm: bytes, rate: int, truth: str | None = None) -> bytes:
    """16-bit mono PCM WAV; an INFO chunk after the data carries the reference text."""
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + _riff_chunk(b"fmt ", fmt) + _riff_chunk(b"data", pcm) + (_info(truth) if truth else b"")
    return _riff_chunk(b"RIFF", body)


def wav_pcm(data: bytes) -> tuple[bytes, int]:
    """(16-bit mono PCM, sample rate) from a WAV file; first channel if stereo."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise LaneError("not a RIFF/WAVE file")
    pos, rate, channels, bits, pcm = 12, 0, 1, 16, b""
    while pos + 8 <= len(data):
        kind, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = data[pos + 8:pos + 8 + size]
        if kind == b"fmt ":
            _, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
        elif kind == b"data":
            pcm = body
        pos += 8 + size + (size % 2)
    if bits != 16 or not rate:
        raise LaneError(f"unsupported WAV ({bits}-bit); need 16-bit PCM")
    if channels > 1:
        step = 2 * channels
        pcm = b"".join(pcm[i:i + 2] for i in range(0, len(pcm) - step + 1, step))
    return pcm, rate


def resample(pcm: bytes, rate: int, target: int) -> bytes:
    """Linear-interpolation resample of 16-bit mono PCM (good enough for speech tests)."""
    if rate == target:
        return pcm
    src = struct.unpack(f"<{len(pcm) // 2}h", pcm[: len(pcm) // 2 * 2])
    n = int(len(src) * target / rate)
    out = []
    for i in range(n):
        x = i * rate / target
        j = int(x)
        a, b = src[min(j, len(src) - 1)], src[min(j + 1, len(src) - 1)]
        out.append(int(a + (b - a) * (x - j)))
    return struct.pack(f"<{n}h", *out)


def tone_pcm(seconds: float = 2.0, rate: int = 16000) -> bytes:
    """A few beeps: stand-in audio when no speech synthesizer is available."""
    out = []
    for i in range(int(seconds * rate)):
        t = i / rate
        beep = (int(t * 4) % 2 == 0)
        out.append(int(8000 * math.sin(2 * math.pi * (440 + 110 * int(t * 4)) * t)) if beep else 0)
    return struct.pack(f"<{len(out)}h", *out)


@dataclass
class Speech:
    wav: bytes
    reference: str
    source: str  # "espeak-ng", "file" or "tone"

    @property
    def seconds(self) -> float:
        pcm, rate = wav_pcm(self.wav)
        return len(pcm) / 2 / rate


def speech(text: str, audio_file: str | None = None, reference: str | None = None) -> Speech:
    """Speech to send: a user file, espeak-ng output, or a tone with a known transcript."""
    if audio_file:
        try:
            with open(audio_file, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise LaneError(f"{audio_file}: {exc.strerror}") from None
        return Speech(data, reference or text, "file")
    for tool in ("espeak-ng", "espeak"):
        if _which(tool):
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "s.wav")
                res = subprocess.run([tool, "-v", "en-us", "-s", "150", "-w", out, text], capture_output=True)
                if res.returncode == 0 and os.path.exists(out):
                    pcm, rate = wav_pcm(open(out, "rb").read())
                    pcm16 = resample(pcm, rate, 16000)
                    return Speech(wav_bytes(pcm16, 16000, text), text, tool)
    return Speech(wav_bytes(tone_pcm(), 16000, TONE_TRANSCRIPT), TONE_TRANSCRIPT, "tone")


def _which(tool: str) -> bool:
    from shutil import which

    return which(tool) is not None


def avi_video(frames: list[bytes], width: int, height: int, fps: int, truth: str,
              audio: bytes | None = None, audio_rate: int = 16000) -> bytes:
    """Uncompressed AVI (24-bit BGR DIB frames, optional PCM track): decodable by ffmpeg/decord, no encoder needed."""
    frame_size = width * height * 3
    n = len(frames)
    streams = 2 if audio else 1
    avih = struct.pack("<IIIIIIIIII16x", 1_000_000 // fps, frame_size * fps, 0, 0x10, n, 0, streams,
                       frame_size, width, height)
    strh_v = struct.pack("<4s4sIHHIIIIIIIIhhhh", b"vids", b"DIB ", 0, 0, 0, 0, 1, fps, 0, n,
                         frame_size, 0xFFFFFFFF, 0, 0, 0, width, height)
    strf_v = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, frame_size, 0, 0, 0, 0)
    hdrl = _riff_chunk(b"avih", avih) + _riff_list(b"strl", _riff_chunk(b"strh", strh_v) + _riff_chunk(b"strf", strf_v))
    per_frame = b""
    if audio:
        per = len(audio) // n // 2 * 2
        strh_a = struct.pack("<4s4sIHHIIIIIIIIhhhh", b"auds", b"\x00" * 4, 0, 0, 0, 0, 2, audio_rate * 2, 0,
                             per * n // 2, per, 0xFFFFFFFF, 2, 0, 0, 0, 0)
        strf_a = struct.pack("<HHIIHHH", 1, 1, audio_rate, audio_rate * 2, 2, 16, 0)
        hdrl += _riff_list(b"strl", _riff_chunk(b"strh", strh_a) + _riff_chunk(b"strf", strf_a))
        per_frame = per
    movi, index, offset = [], [], 4
    for i, frame in enumerate(frames):
        pieces = [(b"00db", frame)]
        if audio:
            pieces.append((b"01wb", audio[i * per_frame:(i + 1) * per_frame]))
        for ckid, data in pieces:
            chunk = _riff_chunk(ckid, data)
            movi.append(chunk)
            index.append(struct.pack("<4sIII", ckid, 0x10, offset, len(data)))
            offset += len(chunk)
    body = (b"AVI " + _riff_list(b"hdrl", hdrl) + _info(truth) + _riff_list(b"movi", b"".join(movi))
            + _riff_chunk(b"idx1", b"".join(index)))
    return _riff_chunk(b"RIFF", body)


def avi_frames(data: bytes) -> list[bytes]:
    """Payloads of the '00db' (video) chunks of an AVI we wrote, in order."""
    out, pos = [], data.find(b"movi") + 4
    while 0 < pos < len(data) - 8:
        kind, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        if kind == b"idx1":
            break
        if kind == b"00db":
            out.append(data[pos + 8:pos + 8 + size])
        pos += 8 + size + (size % 2)
    return out


def moving_square_frames(colours: list[str], n: int, size: int = 224) -> list[bytes]:
    """Bottom-up BGR frames of a square sliding left to right; colour changes per segment."""
    side = size // 4
    out = []
    for i in range(n):
        colour = colours[min(i * len(colours) // n, len(colours) - 1)]
        r, g, b = COLOURS[colour]
        x0 = int((size - side) * i / max(n - 1, 1))
        row_bg = b"\xff\xff\xff" * size
        row_sq = b"\xff\xff\xff" * x0 + bytes((b, g, r)) * side + b"\xff\xff\xff" * (size - side - x0)
        top = (size - side) // 2
        out.append(b"".join(row_sq if top <= y < top + side else row_bg for y in range(size)))
    return out


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


class FileServer:
    """Serves a folder on 127.0.0.1 so a lane can hand the server an http:// media URL."""

    def __init__(self, folder: str):
        import functools
        from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

        class Quiet(SimpleHTTPRequestHandler):
            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"

    def close(self):
        self.httpd.shutdown()


# ---------------------------------------------------------------------------- http


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - best effort detail
        body = ""
    body = " ".join(body.split())[:200]
    return f"HTTP {exc.code}" + (f": {body}" if body else "")


def http(method: str, url: str, body: bytes | None = None, headers: dict | None = None, timeout: float = 600):
    """Open a request; HTTP and connection errors become LaneError naming the endpoint."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        return urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise LaneError(f"server returned {_error_text(exc)} for {method} {_path(url)}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise LaneError(f"cannot reach {url}: {reason}") from None


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[-1].split("/", 1)[-1]


def post_json(url: str, payload: dict, timeout: float = 600) -> dict:
    with http("POST", url, json.dumps(payload).encode(), {"Content-Type": "application/json"}, timeout) as resp:
        try:
            return json.loads(resp.read())
        except json.JSONDecodeError:
            raise LaneError(f"non-JSON reply from POST {_path(url)}") from None


def sse_events(resp):
    """Yield (arrival time, parsed JSON) for each `data:` event until [DONE]."""
    for raw in resp:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            raise LaneError(f"malformed SSE event: {data[:80]}") from None
        if isinstance(event, dict) and event.get("error"):
            err = event["error"]
            raise LaneError(f"server streamed an error: {err.get('message', err) if isinstance(err, dict) else err}")
        yield time.perf_counter(), event


def multipart(fields: dict, files: dict) -> tuple[bytes, str]:
    """(body, content type) for a multipart/form-data upload; files: name -> (filename, bytes, mime)."""
    boundary = "lane" + os.urandom(8).hex()
    out = []
    for name, value in fields.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, data, mime) in files.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                   f"Content-Type: {mime}\r\n\r\n".encode() + data + b"\r\n")
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out), f"multipart/form-data; boundary={boundary}"


def chat_stream(base: str, payload: dict, timeout: float) -> dict:
    """Stream a chat completion: text, time to first text token, audio chunks with arrival times."""
    start = time.perf_counter()
    body = json.dumps(dict(payload, stream=True)).encode()
    text, ttft, audio, ttfa = [], None, [], None
    with http("POST", base + "/v1/chat/completions", body, {"Content-Type": "application/json"}, timeout) as resp:
        for at, event in sse_events(resp):
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    ttft = ttft if ttft is not None else at - start
                    text.append(delta["content"])
                if isinstance(delta.get("audio"), dict) and delta["audio"].get("data"):
                    ttfa = ttfa if ttfa is not None else at - start
                    audio.append(delta["audio"]["data"])
    return {"text": "".join(text), "ttft": ttft, "ttfa": ttfa, "audio_b64": audio,
            "latency": time.perf_counter() - start}


# -------------------------------------------------------------------------- server


def wait_healthy(url: str, timeout: float, proc: subprocess.Popen | None = None, log: str | None = None) -> None:
    """Poll GET /health until 200; fail fast if the launched process dies."""
    deadline = time.monotonic() + timeout
    where = f" (server log: {log})" if log else ""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise LaneError(f"server exited with code {proc.returncode} before becoming healthy{where}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise LaneError(f"server at {url} did not become healthy within {timeout:g}s{where}")


class Launched:
    """A server we started: its own process group, output in a log file, stopped on exit."""

    def __init__(self, argv: list[str], env: dict, url: str, timeout: float, log_dir: str):
        os.makedirs(log_dir, exist_ok=True)
        self.log = os.path.join(log_dir, "server.log")
        self._fh = open(self.log, "wb")
        try:
            self.proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=self._fh,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            raise LaneError(f"cannot start server {argv[0]!r}: {exc.strerror}") from None
        try:
            wait_healthy(url, timeout, self.proc, self.log)
        except BaseException:
            self.stop()
            raise

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._fh.close()


# --------------------------------------------------------------------------- stats


def pct(values: list[float], q: float) -> float | None:
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    k = (len(vals) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


@dataclass
class Sample:
    latency: float
    output: str = ""
    ttft: float | None = None  # time to first text
    ttfa: float | None = None  # time to first audio
    audio_seconds: float | None = None
    mode: str = ""
    ok: bool = True
    detail: str = ""
    extra: dict = field(default_factory=dict)


def summarize(samples: list[Sample], wall: float, wer: float | None = None) -> dict:
    lat = [s.latency for s in samples]
    out = {
        "requests": len(samples),
        "wall_s": round(wall, 4),
        "req_per_s": round(len(samples) / wall, 4) if wall > 0 else None,
        "latency_p50_s": pct(lat, 0.5), "latency_p90_s": pct(lat, 0.9), "latency_p99_s": pct(lat, 0.99),
        "latency_mean_s": statistics.fmean(lat) if lat else None,
    }
    for key in ("ttft", "ttfa"):
        vals = [getattr(s, key) for s in samples if getattr(s, key) is not None]
        if vals:
            out[f"{key}_p50_s"], out[f"{key}_p90_s"] = pct(vals, 0.5), pct(vals, 0.9)
    rtfs = [s.latency / s.audio_seconds for s in samples if s.audio_seconds]
    if rtfs:
        out["rtf_mean"] = statistics.fmean(rtfs)
    if wer is not None:
        out["wer"] = wer
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


COMPARE_ROWS = [
    ("latency_p50_s", "latency p50 (s)", -1), ("latency_p90_s", "latency p90 (s)", -1),
    ("ttft_p50_s", "TTFT p50 (s)", -1), ("ttft_p90_s", "TTFT p90 (s)", -1),
    ("ttfa_p50_s", "TTFA p50 (s)", -1), ("ttfa_p90_s", "TTFA p90 (s)", -1),
    ("req_per_s", "throughput (req/s)", 1), ("rtf_mean", "RTF (mean)", -1), ("wer", "WER", -1),
]


def compare_table(before: dict, after: dict) -> str:
    """Markdown before/after table for a PR description; only metrics both runs have."""
    b, a = before.get("summary", {}), after.get("summary", {})
    lines = [f"Lane `{after.get('lane', '?')}` ({after.get('model', '?')}), "
             f"{after.get('config', {}).get('requests', '?')} requests at concurrency "
             f"{after.get('config', {}).get('concurrency', '?')}", "",
             "| metric | before | after | delta | change |", "|---|---:|---:|---:|---:|"]
    for key, label, better in COMPARE_ROWS:
        if b.get(key) is None or a.get(key) is None:
            continue
        delta = a[key] - b[key]
        change = f"{delta / b[key] * 100:+.1f}%" if b[key] else "n/a"
        verdict = "" if abs(delta) < 1e-12 else (" better" if delta * better > 0 else " worse")
        lines.append(f"| {label} | {b[key]:.4g} | {a[key]:.4g} | {delta:+.4g} | {change}{verdict} |")
    for name, run in (("before", before), ("after", after)):
        lines.append(f"\n{name}: status {run.get('status', '?')}, check: {run.get('check', {}).get('message', '')}")
    return "\n".join(lines)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER with jiwer when installed (normalised text); else a small edit distance over words."""
    ref, hyp = normalise(reference), normalise(hypothesis)
    try:
        import jiwer

        return float(jiwer.wer(ref, hyp)) if ref else float(bool(hyp))
    except ImportError:
        r, h = ref.split(), hyp.split()
        prev = list(range(len(h) + 1))
        for i, rw in enumerate(r, 1):
            cur = [i]
            for j, hw in enumerate(h, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (rw != hw)))
            prev = cur
        return prev[-1] / max(len(r), 1)


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def names(text: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text.lower()) is not None


# ---------------------------------------------------------------------------- lane


class Lane:
    """One validation lane; subclasses override the hooks below."""

    name = "lane"
    repo = "sglang"
    default_model = ""
    default_port = 30000
    default_served: str | None = None  # name the launch command serves the model under

    def served(self, args) -> str:
        return args.served_name or self.default_served or args.model

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        pass

    def label(self, args) -> str:
        """The lane id this invocation stands for (one script can serve several lanes)."""
        return self.name

    def server_command(self, args) -> list[str]:
        return ["python", "-m", "sglang.launch_server", "--model-path", args.model, "--port", str(args.port)]

    def server_env(self, args) -> dict:
        return {}

    def describe(self, args) -> list[str]:
        """The requests this lane would send, one line each (for --dry-run)."""
        return []

    def prepare(self, args, workdir: str) -> None:
        """Generate media; runs once before warm-up."""

    def send(self, args, base: str, index: int) -> Sample:
        raise NotImplementedError

    def check(self, args, samples: list[Sample]) -> tuple[bool, str, dict]:
        """(passed, one-line message, extra summary fields)."""
        return True, "ok", {}

    def close(self) -> None:
        pass


def build_parser(lane: Lane) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(lane.__doc__ or lane.name).strip().splitlines()[0])
    p.add_argument("--dry-run", action="store_true", help="Print the server command and requests; no network.")
    p.add_argument("--launch", action="store_true", help="Start the server with the lane's flags and wait for /health.")
    p.add_argument("--server-url", help="Use a running server (e.g. http://127.0.0.1:30000).")
    p.add_argument("--server-cmd", help="Override the launch command (shell words; {model} and {port} are filled).")
    p.add_argument("--model", default=lane.default_model, help="Model path or HF id (default: %(default)s).")
    p.add_argument("--port", type=int, default=lane.default_port)
    p.add_argument("--requests", type=int, default=8, help="Measured requests.")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--warmup", type=int, default=1, help="Unmeasured requests first.")
    p.add_argument("--timeout", type=float, default=600, help="Per-request timeout (s).")
    p.add_argument("--health-timeout", type=float, default=1200, help="How long --launch waits for /health (s).")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--output", help="Write the JSON result here.")
    p.add_argument("--log-dir", default=None, help="Where --launch writes server.log (default: a temp folder).")
    p.add_argument("--lane-id", help="Registry id to label the result with (default: derived from the flags).")
    p.add_argument("--served-name", default=None, help="Model name sent in requests (default: the lane's).")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="Print the before/after table of two results.")
    lane.add_arguments(p)
    return p


def launch_argv(lane: Lane, args) -> list[str]:
    if args.server_cmd:
        return [w.format(model=args.model, port=args.port) for w in shlex.split(args.server_cmd)]
    return lane.server_command(args)


def _say(msg: str) -> None:
    print(msg, flush=True)


def _fail(lane: Lane, msg: str, code: int) -> int:
    print(f"lane {lane.name}: error: {msg}", file=sys.stderr, flush=True)
    return code


def run_requests(lane: Lane, args, base: str) -> tuple[list[Sample], float]:
    for i in range(args.warmup):
        lane.send(args, base, -1 - i)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(args.concurrency, 1)) as pool:
        samples = list(pool.map(lambda i: lane.send(args, base, i), range(args.requests)))
    return samples, time.perf_counter() - start


def print_table(lane: Lane, summary: dict, status: str, message: str) -> None:
    _say(f"\nlane {lane.name}: {status.upper()} - {message}")
    for key, value in summary.items():
        _say(f"  {key:<16} {value}")


def main(lane: Lane, argv: list[str] | None = None) -> int:
    args = build_parser(lane).parse_args(argv)
    lane.name = args.lane_id or lane.label(args)
    if args.compare:
        try:
            before, after = (json.load(open(p, encoding="utf-8")) for p in args.compare)
        except (OSError, json.JSONDecodeError) as exc:
            return _fail(lane, f"cannot read result: {exc}", EXIT_ERROR)
        _say(compare_table(before, after))
        return 0
    if args.requests < 1 or args.concurrency < 1 or args.warmup < 0:
        return _fail(lane, "--requests and --concurrency must be >= 1, --warmup >= 0", EXIT_ERROR)
    argv_server = launch_argv(lane, args)
    env = lane.server_env(args)
    if args.dry_run:
        _say(f"lane: {lane.name} ({lane.repo})")
        _say("server: " + " ".join(f"{k}={v}" for k, v in env.items()) + (" " if env else "") + shlex.join(argv_server))
        _say(f"load: {args.requests} requests, concurrency {args.concurrency}, warmup {args.warmup}")
        for line in lane.describe(args):
            _say("request: " + line)
        return 0
    if not args.launch and not args.server_url:
        return _fail(lane, "pass --server-url URL, --launch or --dry-run", EXIT_ERROR)
    base = (args.server_url or f"http://127.0.0.1:{args.port}").rstrip("/")
    server = None
    workdir = tempfile.mkdtemp(prefix=f"lane-{lane.name}-")
    try:
        if args.launch:
            _say("launching: " + shlex.join(argv_server))
            server = Launched(argv_server, env, base, args.health_timeout, args.log_dir or workdir)
        else:
            wait_healthy(base, min(args.health_timeout, 30))
        lane.prepare(args, workdir)
        samples, wall = run_requests(lane, args, base)
    except LaneSkip as exc:
        _say(f"lane {lane.name}: SKIPPED - {exc}")
        return 0
    except LaneError as exc:
        _write(args, lane, "error", {}, [], str(exc))
        return _fail(lane, str(exc), EXIT_ERROR)
    finally:
        lane.close()
        if server:
            server.stop()
    passed, message, extra = lane.check(args, samples)
    summary = summarize(samples, wall, extra.pop("wer", None))
    summary.update(extra)
    status = "pass" if passed else "fail"
    _write(args, lane, status, summary, samples, message)
    print_table(lane, summary, status, message)
    return 0 if passed else EXIT_FAIL


def _write(args, lane: Lane, status: str, summary: dict, samples: list[Sample], message: str) -> None:
    if not args.output:
        return
    result = {
        "lane": lane.name, "repo": lane.repo, "model": args.model, "status": status,
        "server_url": args.server_url, "launched": bool(args.launch),
        "config": {k: v for k, v in vars(args).items() if k not in ("compare", "dry_run")},
        "check": {"passed": status == "pass", "message": message},
        "summary": summary, "samples": [asdict(s) for s in samples],
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    folder = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".result.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
    os.replace(tmp, args.output)

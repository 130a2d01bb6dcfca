"""Speech to send: WAV reading and writing, resampling, espeak-ng synthesis, or a tone with a known transcript."""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass

from _lane import LaneError
from _media import riff_chunk, truth_info

TONE_TRANSCRIPT = "the quick brown fox jumps over the lazy dog"


def wav_bytes(pcm: bytes, rate: int, truth: str | None = None) -> bytes:
    """16-bit mono PCM WAV; an INFO chunk after the data carries the reference text."""
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + riff_chunk(b"fmt ", fmt) + riff_chunk(b"data", pcm) + (truth_info(truth) if truth else b"")
    return riff_chunk(b"RIFF", body)


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
    """Linear-interpolation resample of 16-bit mono PCM (good enough for speech tests); numpy when present."""
    if rate == target:
        return pcm
    pcm = pcm[: len(pcm) // 2 * 2]
    n = int(len(pcm) // 2 * target / rate)
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None and pcm:
        src = np.frombuffer(pcm, "<i2").astype(np.float64)
        out = np.interp(np.arange(n) * rate / target, np.arange(len(src)), src)
        return np.trunc(out).astype("<i2").tobytes()
    src = struct.unpack(f"<{len(pcm) // 2}h", pcm)
    out = []
    for i in range(n):
        x = i * rate / target
        j = int(x)
        a, b = src[min(j, len(src) - 1)], src[min(j + 1, len(src) - 1)]
        out.append(int(a + (b - a) * (x - j)))
    return struct.pack(f"<{n}h", *out)


def silence(seconds: float, rate: int) -> bytes:
    return b"\x00\x00" * int(seconds * rate)


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
    wav: bytes  # the file's bytes: a WAV we wrote, or the user's file in its own format
    reference: str
    source: str  # "espeak-ng", "file" or "tone"
    filename: str = "audio.wav"
    mime: str = "audio/wav"

    @property
    def seconds(self) -> float | None:
        """Duration of a WAV; None for other formats (no decoder here)."""
        if self.wav[:4] != b"RIFF":
            return None
        pcm, rate = wav_pcm(self.wav)
        return len(pcm) / 2 / rate


def synthesizer() -> str | None:
    """The speech synthesizer on PATH: espeak-ng, else espeak, else None."""
    from shutil import which

    return next((tool for tool in ("espeak-ng", "espeak") if which(tool)), None)


def synthesize(tool: str, text: str, rate: int = 16000) -> bytes:
    """16-bit mono PCM at `rate` of `text` spoken by espeak(-ng); LaneError when it fails."""
    import subprocess  # here, like which() above: a --dry-run synthesizes nothing
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "s.wav")
        res = subprocess.run([tool, "-v", "en-us", "-s", "150", "-w", out, text], capture_output=True)
        if res.returncode != 0 or not os.path.exists(out):
            detail = res.stderr.decode("utf-8", "replace").strip().splitlines()
            raise LaneError(f"{tool} could not synthesize {text[:40]!r}: "
                            f"{detail[-1] if detail else f'exit {res.returncode}'}")
        with open(out, "rb") as fh:
            pcm, source_rate = wav_pcm(fh.read())
    return resample(pcm, source_rate, rate)


def speech(text: str, audio_file: str | None = None, reference: str | None = None) -> Speech:
    """Speech to send: a user file, espeak-ng output, or a tone with a known transcript."""
    if audio_file:
        try:
            with open(audio_file, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise LaneError(f"{audio_file}: {exc.strerror}") from None
        return Speech(data, reference or text, "file")
    tool = synthesizer()
    if tool:
        try:
            return Speech(wav_bytes(synthesize(tool, text), 16000, text), text, tool)
        except LaneError:
            pass
    return Speech(wav_bytes(tone_pcm(), 16000, TONE_TRANSCRIPT), TONE_TRANSCRIPT, "tone")

"""Speech the stand-in server "says" and "hears": tones it can hear back, fake espeak-ng clips, raw PCM streams.

Each reply is a tone with an amplitude of its own; the registry remembers which text each
reply's PCM speaks, so the stand-in's transcription endpoint hears a reply back exactly
when a lane sends its chunks joined intact and in order.
"""

from __future__ import annotations

import hashlib
import math
import struct
import threading
import time

RATE, TONE_HZ = 24000, 250  # 0.4 s and 0.5 s chunks hold whole periods, so the joins are continuous
SPEECH_MARK = struct.pack("<2h", 0x5A7A, 0x7A5A)  # fakes/bin/espeak-ng's header before the words it says


def said_in(pcm: bytes) -> str | None:
    """The words fakes/bin/espeak-ng wrote into this PCM (every clip's, in order), or None."""
    texts, pos = [], pcm.find(SPEECH_MARK)
    while pos >= 0:
        if pos % 2 == 0 and pos + 6 <= len(pcm):
            n = struct.unpack("<h", pcm[pos + 4:pos + 6])[0]
            end = pos + 6 + 2 * n
            if 0 < n and end <= len(pcm):
                texts.append(bytes(v & 0xFF for v in struct.unpack(f"<{n}h", pcm[pos + 6:end])).decode("utf-8", "replace"))
        pos = pcm.find(SPEECH_MARK, pos + 1)
    return " ".join(texts) if texts else None


def pcm_of(audio: bytes) -> bytes:
    """The data chunk of a WAV (the bytes themselves if not a WAV)."""
    if audio[:4] != b"RIFF":
        return audio
    pos = 12
    while pos + 8 <= len(audio):
        kind, size = audio[pos:pos + 4], struct.unpack("<I", audio[pos + 4:pos + 8])[0]
        if kind == b"data":
            return audio[pos + 8:pos + 8 + size]
        pos += 8 + size + (size % 2)
    return b""


class Voice:
    """seam_glitch: from the second chunk on, the tone runs a quarter period ahead (a click at join 1).
    seam_gap: every chunk but the last loses its last `seam_gap` samples while the next starts on time,
    as sglang-omni's Code2Wav stream did before #1355 (555 samples at every join)."""

    def __init__(self, seam_glitch: bool = False, seam_gap: int = 0):
        self.seam_glitch = seam_glitch
        self.seam_gap = seam_gap
        self.spoken: dict[str, str] = {}  # sha256 of a reply's PCM -> the text it speaks
        self._replies = 0
        self._lock = threading.Lock()

    def speak(self, text: str, chunks: int, seconds: float) -> list[bytes]:
        """`chunks` 16-bit PCM chunks of one reply, remembered as saying `text`."""
        with self._lock:
            self._replies += 1
            amplitude = 6000 + 7 * (self._replies % 3000)
        n, out, shift = int(seconds * RATE), [], 0
        for k in range(chunks):
            if self.seam_glitch and k == 1:
                shift = RATE // TONE_HZ // 4
            keep = n - self.seam_gap if self.seam_gap and k < chunks - 1 else n
            out.append(struct.pack(f"<{keep}h", *(int(amplitude * math.sin(2 * math.pi * TONE_HZ * (i + shift) / RATE))
                                                  for i in range(keep))))
        self.spoken[hashlib.sha256(b"".join(out)).hexdigest()] = text
        return out

    def heard(self, audio: bytes) -> str | None:
        """The text a reply's audio (WAV or PCM) speaks, or None for audio this voice never said."""
        return self.spoken.get(hashlib.sha256(pcm_of(audio)).hexdigest())


def pcm_stream(handler, chunks: list[bytes], delay: float) -> None:
    """Answer like sglang-omni's streamed /v1/audio/speech: raw audio/pcm, one HTTP chunk per audio chunk."""
    handler.send_response(200)
    handler.send_header("Content-Type", "audio/pcm")
    handler.send_header("X-Sample-Rate", str(RATE))
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    for chunk in chunks:
        time.sleep(delay)
        handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        handler.wfile.flush()
    handler.wfile.write(b"0\r\n\r\n")

"""Generated test media (PNG images, uncompressed AVI video) and the truth tags they carry.

Media we generate carry TRUTH_MARK in their metadata (PNG tEXt, RIFF INFO) so a stand-in
server can answer without a model; real models never see it.
"""

from __future__ import annotations

import base64
import math
import struct
import threading
import zlib

TRUTH_MARK = "LANE-TRUTH:"
COLOURS = {
    "red": (220, 30, 30), "green": (30, 160, 60), "blue": (30, 60, 220),
    "yellow": (240, 200, 20), "purple": (130, 40, 160), "orange": (245, 130, 20),
}
SHAPES = ("circle", "square", "triangle")


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


# ----------------------------------------------------------------------------- PNG


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


# ---------------------------------------------------------------------------- RIFF


def riff_chunk(fourcc: bytes, data: bytes) -> bytes:
    return fourcc + struct.pack("<I", len(data)) + data + (b"\x00" if len(data) % 2 else b"")


def riff_list(kind: bytes, body: bytes) -> bytes:
    return riff_chunk(b"LIST", kind + body)


def truth_info(truth: str) -> bytes:
    """A RIFF INFO list whose comment carries the truth tag (WAV and AVI)."""
    return riff_list(b"INFO", riff_chunk(b"ICMT", f"{TRUTH_MARK}{truth};".encode() + b"\x00"))


# ----------------------------------------------------------------------------- AVI


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
    hdrl = riff_chunk(b"avih", avih) + riff_list(b"strl", riff_chunk(b"strh", strh_v) + riff_chunk(b"strf", strf_v))
    per_frame = b""
    if audio:
        per = len(audio) // n // 2 * 2
        strh_a = struct.pack("<4s4sIHHIIIIIIIIhhhh", b"auds", b"\x00" * 4, 0, 0, 0, 0, 2, audio_rate * 2, 0,
                             per * n // 2, per, 0xFFFFFFFF, 2, 0, 0, 0, 0)
        strf_a = struct.pack("<HHIIHHH", 1, 1, audio_rate, audio_rate * 2, 2, 16, 0)
        hdrl += riff_list(b"strl", riff_chunk(b"strh", strh_a) + riff_chunk(b"strf", strf_a))
        per_frame = per
    movi, index, offset = [], [], 4
    for i, frame in enumerate(frames):
        pieces = [(b"00db", frame)]
        if audio:
            pieces.append((b"01wb", audio[i * per_frame:(i + 1) * per_frame]))
        for ckid, data in pieces:
            chunk = riff_chunk(ckid, data)
            movi.append(chunk)
            index.append(struct.pack("<4sIII", ckid, 0x10, offset, len(data)))
            offset += len(chunk)
    body = (b"AVI " + riff_list(b"hdrl", hdrl) + truth_info(truth) + riff_list(b"movi", b"".join(movi))
            + riff_chunk(b"idx1", b"".join(index)))
    return riff_chunk(b"RIFF", body)


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

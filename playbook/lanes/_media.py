"""Generated test media (PNG images, uncompressed AVI video) and the truth tags they carry.

Media we generate carry TRUTH_MARK in their metadata (PNG tEXt, RIFF INFO) so a stand-in
server can answer without a model; real models never see it.
"""

from __future__ import annotations

import base64
import math
import random
import struct
import threading
import zlib
from dataclasses import dataclass

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


def shape_span(shape: str, y: int, size: int, place: tuple[float, float, float] = (0.5, 0.5, 0.3)) -> tuple[int, int] | None:
    """Columns [x0, x1) the shape covers on row y of a size x size canvas.

    `place` is (centre x, centre y, radius) as fractions of the side; the default is centred.
    """
    cx, cy, r = place[0] * size, place[1] * size, place[2] * size
    if shape == "square":
        return (int(cx - r), int(cx + r)) if abs(y - cy) <= r else None
    if shape == "circle":
        dy = y - cy
        if abs(dy) > r:
            return None
        dx = math.sqrt(r * r - dy * dy)
        return int(cx - dx), int(cx + dx)
    top, bottom = cy - r, cy + r  # triangle pointing up
    if not top <= y <= bottom:
        return None
    half = (y - top) / (bottom - top) * r
    return int(cx - half), int(cx + half)


@dataclass
class Look:
    """How one generated picture differs from the next: placement, background tint, a pixel nonce.

    The tint stays near white and the nonce lives in the top row's low bits, so what a
    model (or the stand-in server) sees is unchanged, while every request's pixels, and so
    its multimodal cache key, differ.
    """

    place: tuple[float, float, float] = (0.5, 0.5, 0.3)
    background: tuple[int, int, int] = (255, 255, 255)
    stamp: int | None = None

    @classmethod
    def draw(cls, rnd: random.Random, stamp: int, radius: tuple[float, float] = (0.2, 0.32)) -> Look:
        """A random look; `radius` bounds the shape's half-side as a fraction of the canvas."""
        r = rnd.uniform(*radius)
        room = 0.5 - r - 0.02
        place = (0.5 + rnd.uniform(-room, room), 0.5 + rnd.uniform(-room, room), r)
        return cls(place, tuple(rnd.randint(244, 255) for _ in range(3)), stamp)

    def stamp_row(self, row: bytearray, pixel: int = 3) -> None:
        """Write the 32-bit stamp into the first 32 pixels' last channel (254 or 255)."""
        if self.stamp is None:
            return
        for bit in range(min(32, len(row) // pixel)):
            row[bit * pixel + pixel - 1] = 254 + ((self.stamp >> bit) & 1)


def png_image(shape: str, colour: str, size: int = 448, look: Look | None = None) -> bytes:
    """A light PNG with one coloured shape (centred on white by default); the truth rides in a tEXt chunk."""
    look = look or Look()
    white, ink = bytes(look.background), bytes(COLOURS[colour])
    rows = []
    for y in range(size):
        row = bytearray(white * size)
        span = shape_span(shape, y, size, look.place)
        if span:
            row[span[0] * 3:span[1] * 3] = ink * (span[1] - span[0])
        if y == 0:
            look.stamp_row(row)
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


def moving_square_frames(colours: list[str], n: int, size: int = 224, look: Look | None = None) -> list[bytes]:
    """Bottom-up BGR frames of a square sliding across; colour changes per segment.

    The default slides a size/4 square left to right through the middle on white; a `look`
    (Look.draw) sets the square's side and row, the direction (its centre x left or right of
    half-way), the background and the per-request pixel stamp.
    """
    look = look or Look(place=(0.5, 0.5, 0.125))
    side = max(2, int(size * look.place[2] * 2))
    top = min(max(int(look.place[1] * size - side / 2), 0), size - side)
    leftwards = look.place[0] < 0.5 and look.stamp is not None
    bg = bytes(reversed(look.background))
    out = []
    for i in range(n):
        colour = colours[min(i * len(colours) // n, len(colours) - 1)]
        r, g, b = COLOURS[colour]
        step = i / max(n - 1, 1)
        x0 = int((size - side) * (1 - step if leftwards else step))
        row_bg = bytearray(bg * size)
        look.stamp_row(row_bg)
        row_sq = bg * x0 + bytes((b, g, r)) * side + bg * (size - side - x0)
        rows = [row_sq if top <= y < top + side else (bytes(row_bg) if y == 0 else bg * size) for y in range(size)]
        out.append(b"".join(rows))
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

"""What each request sends: its own seeded media by default, one medium with --repeat-media, or the user's files.

SGLang's multimodal embedding cache and radix cache answer repeated inputs, so a run that
repeats its media measures the caches, not the model. Each request therefore gets media of
its own, derived from --seed and the request's index (warm-up requests have negative
indices, so they never pre-fill a measured request's cache). --repeat-media sends request
0's media every time, to measure cache hits on purpose. --media-dir replays the user's own
files, picked by extension and cycled through in name order.

The transcript convention: NAME.txt beside NAME.wav (or .flac, .mp3, ...) holds the words
spoken, required for WER. Beside an image or video, NAME.txt holds words a correct answer
must contain (optional: without it any non-empty answer passes).
"""

from __future__ import annotations

import base64
import os
import random
from dataclasses import dataclass

from _lane import LaneError

IMAGE_EXT = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
             ".bmp": "image/bmp", ".gif": "image/gif"}
VIDEO_EXT = {".mp4": "video/mp4", ".avi": "video/avi", ".mov": "video/quicktime", ".mkv": "video/x-matroska",
             ".webm": "video/webm"}
AUDIO_EXT = {".wav": "audio/wav", ".flac": "audio/flac", ".mp3": "audio/mpeg", ".ogg": "audio/ogg",
             ".m4a": "audio/mp4", ".opus": "audio/ogg"}
KINDS = {"image": IMAGE_EXT, "video": VIDEO_EXT, "audio": AUDIO_EXT}


def add_arguments(p) -> None:
    p.add_argument("--seed", type=int, default=0,
                   help="Seed of the generated media; each request gets media of its own (default %(default)s).")
    p.add_argument("--repeat-media", action="store_true",
                   help="Send the same media with every request, to measure cache hits on purpose.")
    p.add_argument("--media-dir", metavar="DIR",
                   help="Replay your own files (images, videos, audio by extension), cycling through them; "
                        "NAME.txt beside a file holds its transcript (audio) or words the answer must name.")


def slot(args, index: int) -> int:
    """Which media a request gets: its own index, or 0 for every request with --repeat-media."""
    return 0 if args.repeat_media else index


def rng(args, index: int, kind: str) -> random.Random:
    """A generator fixed by --seed, the request's media slot and what it draws (`kind`)."""
    return random.Random(f"{args.seed}:{kind}:{slot(args, index)}")


def nonce(args, index: int) -> int:
    """32 bits that differ for every media slot of one seed: stamped into generated pixels."""
    return (args.seed * 1_000_003 + slot(args, index)) & 0xFFFFFFFF


def describe(args) -> str:
    if args.media_dir:
        how = "the first file every request" if args.repeat_media else "cycling in name order"
        return f"files from {args.media_dir} ({how})"
    if args.repeat_media:
        return f"the same generated media every request (--repeat-media, seed {args.seed}): measures cache hits"
    return f"distinct generated media per request (seed {args.seed}): caches cannot answer"


@dataclass
class MediaFile:
    path: str
    mime: str
    expected: str | None  # the text of NAME.txt beside it

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def read(self) -> bytes:
        try:
            with open(self.path, "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise LaneError(f"{self.path}: {exc.strerror}") from None

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.read()).decode()}"


def media_files(folder: str, kind: str) -> list[MediaFile]:
    """The files of one kind in `folder` (name order), with their NAME.txt; LaneError when there are none."""
    exts = KINDS[kind]
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise LaneError(f"--media-dir {folder}: {exc.strerror}") from None
    out = []
    for name in names:
        stem, ext = os.path.splitext(name)
        if ext.lower() not in exts:
            continue
        txt = os.path.join(folder, stem + ".txt")
        expected = None
        if os.path.isfile(txt):
            with open(txt, encoding="utf-8", errors="replace") as fh:
                expected = " ".join(fh.read().split())
        out.append(MediaFile(os.path.abspath(os.path.join(folder, name)), exts[ext.lower()], expected))
    if not out:
        raise LaneError(f"--media-dir {folder} has no {kind} files ({', '.join(sorted(exts))})")
    return out


def pick(files: list, args, index: int, per_request: int = 1, k: int = 0):
    """The k-th of `per_request` files request `index` gets, cycling through `files`."""
    return files[(slot(args, index) * per_request + k) % len(files)]

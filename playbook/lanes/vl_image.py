#!/usr/bin/env python3
"""Qwen-VL image chat lane: single image, multi-image and vision-encoder data parallel.

Sends generated PNGs (a coloured shape each) as data URLs to /v1/chat/completions,
streams the answer, and checks it names every image's colour (and the shape, for one
image). Measures latency, time to first token and req/s.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _client import chat_call, chat_stream  # noqa: E402
from _lane import Lane, Sample  # noqa: E402
from _media import COLOURS, SHAPES, data_url, png_image  # noqa: E402
from _runner import main  # noqa: E402
from _scoring import names  # noqa: E402

SHAPE_WORDS = {"circle": ("circle", "round", "disc", "disk", "dot", "ball", "oval"),
               "square": ("square", "rectangle", "box", "block"), "triangle": ("triangle", "triangular", "pyramid")}


class ImageLane(Lane):
    """Qwen-VL image chat (single, multi-image, encoder DP)."""

    name = "vl-single-image"
    default_model = "Qwen/Qwen3-VL-8B-Instruct"

    def add_arguments(self, p):
        p.add_argument("--images", type=int, default=1, help="Images per request.")
        p.add_argument("--image-size", type=int, default=448)
        p.add_argument("--encoder-dp", action="store_true", help="Launch with --mm-enable-dp-encoder over --tp GPUs.")
        p.add_argument("--tp", type=int, default=None, help="Tensor parallel size (default 2 with --encoder-dp, else 1).")
        p.add_argument("--vit-cuda-graph", action="store_true", help="Set SGLANG_VIT_ENABLE_CUDA_GRAPH=1.")

    def label(self, args):
        return "vl-encoder-dp" if args.encoder_dp else ("vl-multi-image" if args.images > 1 else "vl-single-image")

    def server_command(self, args):
        cmd = super().server_command(args)
        tp = args.tp or (2 if args.encoder_dp else 1)
        if tp > 1:
            cmd += ["--tp", str(tp)]
        if args.encoder_dp:
            cmd += ["--mm-enable-dp-encoder"]
        return cmd

    def server_env(self, args):
        return {"SGLANG_VIT_ENABLE_CUDA_GRAPH": "1"} if args.vit_cuda_graph else {}

    def _pick(self, index: int, n: int) -> list[tuple[str, str]]:
        # Vary colour and shape per request so the multimodal cache does not answer for us.
        colours = list(COLOURS)
        return [(colours[(index + k) % len(colours)], SHAPES[(index + 2 * k) % len(SHAPES)]) for k in range(n)]

    def _question(self, n: int) -> str:
        if n == 1:
            return "What colour is the shape in this image, and what shape is it? Answer in a few words."
        return (f"There are {n} images. For each image in order, name the colour of its shape. "
                "Answer as a comma-separated list of colours.")

    def describe(self, args):
        picks = ", ".join(f"{c} {s}" for c, s in self._pick(0, args.images))
        return [f"POST /v1/chat/completions stream=true: {args.images} x PNG {args.image_size}px data URL "
                f"({picks}); question: {self._question(args.images)!r}; max_tokens={args.max_tokens}"]

    def prepare(self, args, workdir):
        self.pngs = {}

    def _png(self, colour, shape, size):
        key = (colour, shape, size)
        if key not in self.pngs:
            self.pngs[key] = data_url("image/png", png_image(shape, colour, size))
        return self.pngs[key]

    def calls(self, args, index):
        picks = self._pick(index, args.images)
        parts = [{"type": "image_url", "image_url": {"url": self._png(c, s, args.image_size)}} for c, s in picks]
        parts.append({"type": "text", "text": self._question(args.images)})
        return [chat_call(self.served(args), parts, args)]

    def send(self, args, base, index):
        picks = self._pick(index, args.images)
        res = chat_stream(base, self.calls(args, index)[0].body, args.timeout)
        missing = [c for c, _ in picks if not names(res["text"], c)]
        if args.images == 1 and not any(names(res["text"], w) for w in SHAPE_WORDS[picks[0][1]]):
            missing.append(picks[0][1])
        return Sample(res["latency"], res["text"], ttft=res["ttft"], ok=not missing,
                      detail=f"expected {', '.join(f'{c} {s}' for c, s in picks)}; missing {missing}" if missing else "")

    def passed(self, args, samples):
        return f"all {len(samples)} answers name the expected colours/shapes"


if __name__ == "__main__":
    sys.exit(main(ImageLane()))

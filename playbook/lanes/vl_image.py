#!/usr/bin/env python3
"""Qwen-VL image chat lane: single image, multi-image and vision-encoder data parallel.

Sends generated PNGs (a coloured shape each) as data URLs to /v1/chat/completions,
streams the answer, and checks it names every image's colour (and the shape, for one
image). Every request's images differ (colour, shape, placement, tint, a pixel stamp;
see _workload), so the multimodal cache cannot answer; --repeat-media sends the same
ones, --media-dir your own (checked against NAME.txt's words when present). Measures
latency, time to first token and req/s.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _client import chat_call, chat_stream  # noqa: E402
from _lane import Lane, Sample  # noqa: E402
from _media import COLOURS, SHAPES, Look, data_url, png_image  # noqa: E402
from _runner import main  # noqa: E402
from _scoring import names  # noqa: E402
from _workload import media_files, nonce, pick, rng  # noqa: E402

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

    def _pick(self, args, index: int) -> list[tuple[str, str]]:
        """(colour, shape) per image of a request, drawn from the seed; images of one request differ in colour."""
        rnd = rng(args, index, "image")
        colours = rnd.sample(list(COLOURS), min(args.images, len(COLOURS)))
        colours += [rnd.choice(list(COLOURS)) for _ in range(args.images - len(colours))]
        return [(c, rnd.choice(SHAPES)) for c in colours]

    def _question(self, args) -> str:
        n = args.images
        if args.media_dir:
            return ("Describe this image in one sentence." if n == 1 else
                    f"There are {n} images. Describe each one in one short sentence, in order.")
        if n == 1:
            return "What colour is the shape in this image, and what shape is it? Answer in a few words."
        return (f"There are {n} images. For each image in order, name the colour of its shape. "
                "Answer as a comma-separated list of colours.")

    def describe(self, args):
        if args.media_dir:
            what = f"{args.images} x image file from {args.media_dir} as data URL"
        else:
            picks = ", ".join(f"{c} {s}" for c, s in self._pick(args, 0))
            what = f"{args.images} x PNG {args.image_size}px data URL (request 0: {picks})"
        return [f"POST /v1/chat/completions stream=true: {what}; question: {self._question(args)!r}; "
                f"max_tokens={args.max_tokens}"]

    def prepare(self, args, workdir):
        self.files = media_files(args.media_dir, "image") if args.media_dir else None

    def _parts(self, args, index):
        """(image parts, expected words, what the images are) of one request."""
        if self.files:
            chosen = [pick(self.files, args, index, args.images, k) for k in range(args.images)]
            words = [w for f in chosen for w in (f.expected or "").split()]
            return [f.data_url() for f in chosen], words, ", ".join(f.name for f in chosen)
        picks = self._pick(args, index)
        rnd, stamp = rng(args, index, "look"), nonce(args, index)
        urls = [data_url("image/png", png_image(s, c, args.image_size, Look.draw(rnd, stamp * 8 + k)))
                for k, (c, s) in enumerate(picks)]
        words = [c for c, _ in picks] + ([picks[0][1]] if args.images == 1 else [])
        return urls, words, ", ".join(f"{c} {s}" for c, s in picks)

    def _request(self, args, index):
        """(the chat Call, expected words, what the images are) of one request."""
        urls, words, what = self._parts(args, index)
        parts = [{"type": "image_url", "image_url": {"url": url}} for url in urls]
        parts.append({"type": "text", "text": self._question(args)})
        return chat_call(self.served(args), parts, args), words, what

    def calls(self, args, index):
        return [self._request(args, index)[0]]

    def send(self, args, base, index):
        call, words, what = self._request(args, index)
        res = chat_stream(base, call.body, args.timeout)
        missing = [w for w in words if not any(names(res["text"], x) for x in SHAPE_WORDS.get(w, (w,)))]
        if not res["text"].strip():
            missing.append("any answer")
        return Sample(res["latency"], res["text"], ttft=res["ttft"], ok=not missing,
                      detail=f"expected {what}; missing {missing}" if missing else "")

    def passed(self, args, samples):
        return f"all {len(samples)} answers name the expected colours/shapes"


if __name__ == "__main__":
    sys.exit(main(ImageLane()))

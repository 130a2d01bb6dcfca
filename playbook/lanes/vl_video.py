#!/usr/bin/env python3
"""Qwen-VL video lane: raw file path, http URL, data URL and processor-output inputs; long video with chunked prefill.

Writes an uncompressed AVI of a coloured square sliding across the frame (no ffmpeg
needed), sends it in each requested input style, and checks the answer names the
square's colour (with --long the square changes colour half-way and both colours
must be named). Measures latency, TTFT and req/s; --long repeats the same video so
the multimodal embedding cache is exercised.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _client import ask, post_json  # noqa: E402
from _lane import Lane, LaneError, LaneSkip, Sample, comma_choices  # noqa: E402
from _media import COLOURS, FileServer, avi_frames, avi_video, data_url, moving_square_frames  # noqa: E402
from _runner import main  # noqa: E402
from _scoring import names  # noqa: E402

MODES = ("path", "url", "data-url", "processor")


class VideoLane(Lane):
    """Qwen-VL video input (file path, URL, data URL, processor output; long video)."""

    name = "vl-video"
    default_model = "Qwen/Qwen3-VL-8B-Instruct"

    def add_arguments(self, p):
        p.add_argument("--video-input", default="path,url,data-url",
                       help=f"Comma-separated input styles, cycled per request: {', '.join(MODES)}.")
        p.add_argument("--long", action="store_true", help="Long video (192 frames) with chunked prefill.")
        p.add_argument("--frames", type=int, default=None, help="Frames (default 16, or 192 with --long).")
        p.add_argument("--fps", type=int, default=2)
        p.add_argument("--size", type=int, default=224, help="Frame side in pixels (multiple of 28).")
        p.add_argument("--chunked-prefill-size", type=int, default=2048, help="With --long.")

    def label(self, args):
        return "vl-long-video-chunked" if args.long else "vl-video"

    def _modes(self, args):
        return comma_choices(self, "--video-input", args.video_input, MODES)

    def server_command(self, args):
        cmd = super().server_command(args)
        if args.long:
            cmd += ["--chunked-prefill-size", str(args.chunked_prefill_size), "--keep-mm-feature-on-device"]
        return cmd

    def _colours(self, args, index):
        names_ = list(COLOURS)
        if args.long:  # same video every time: the point is the cache and chunked prefill
            return ["red", "blue"]
        return [names_[index % len(names_)]]

    def _frames(self, args):
        return args.frames or (192 if args.long else 16)

    def _question(self, args):
        if args.long:
            return "The square changes colour during the video. Name its colours in the order they appear."
        return "What colour is the moving square, and which way does it move? Answer briefly."

    def describe(self, args):
        return [f"POST /v1/chat/completions stream=true: video as {mode} "
                f"(AVI {self._frames(args)} frames {args.size}px @ {args.fps} fps, "
                f"square {'/'.join(self._colours(args, 0))}); question: {self._question(args)!r}"
                if mode != "processor" else
                "POST /generate: HF processor output (pixel_values_videos, video_grid_thw, format=processor_output) "
                "built with transformers.AutoProcessor on the client"
                for mode in self._modes(args)]

    def prepare(self, args, workdir):
        self.workdir, self.files, self.server, self.lock = workdir, {}, None, threading.Lock()
        if "url" in self._modes(args):
            self.server = FileServer(workdir)

    def close(self):
        if getattr(self, "server", None):
            self.server.close()

    def _video(self, args, colours):
        key = tuple(colours)
        with self.lock:
            return self.files.get(key) or self._write(args, colours)

    def _write(self, args, colours):
        key = tuple(colours)
        if key not in self.files:
            frames = moving_square_frames(colours, self._frames(args), args.size)
            truth = "square " + " then ".join(colours)
            name = f"clip-{'-'.join(colours)}.avi"
            with open(os.path.join(self.workdir, name), "wb") as fh:
                fh.write(avi_video(frames, args.size, args.size, args.fps, truth))
            self.files[key] = name
        return self.files[key]

    def send(self, args, base, index):
        modes = self._modes(args)
        mode = modes[index % len(modes)]
        colours = self._colours(args, index)
        name = self._video(args, colours)
        path = os.path.join(self.workdir, name)
        if mode == "processor":
            text, latency, ttft = self._processor_request(args, base, path)
        else:
            url = {"path": path, "url": self.server.url(name) if self.server else "",
                   "data-url": None}[mode] or data_url("video/avi", open(path, "rb").read())
            parts = [{"type": "video_url", "video_url": {"url": url}}, {"type": "text", "text": self._question(args)}]
            res = ask(base, self.served(args), parts, args)
            text, latency, ttft = res["text"], res["latency"], res["ttft"]
        missing = [c for c in colours if not names(text, c)]
        return Sample(latency, text, ttft=ttft, mode=mode, ok=not missing,
                      detail=f"{mode}: expected {'/'.join(colours)}, missing {missing}" if missing else "")

    def _processor_request(self, args, base, path):
        """Experimental: ship the HF processor's output instead of the raw video."""
        try:
            import numpy as np
            from transformers import AutoProcessor
        except ImportError:
            raise LaneSkip("processor mode needs numpy and transformers in this Python") from None
        processor = AutoProcessor.from_pretrained(args.model)
        # AVI DIB frames are bottom-up BGR; the processor wants top-down RGB.
        frames = np.stack([np.frombuffer(f, np.uint8).reshape(args.size, args.size, 3)[::-1, :, ::-1]
                           for f in avi_frames(open(path, "rb").read())])
        msgs = [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": self._question(args)}]}]
        prompt = processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        out = processor(text=[prompt], videos=[frames], return_tensors="np")
        item = {"format": "processor_output", "pixel_values_videos": out["pixel_values_videos"].tolist(),
                "video_grid_thw": out["video_grid_thw"].tolist()}
        start = time.perf_counter()
        reply = post_json(base + "/generate", {"input_ids": out["input_ids"][0].tolist(), "video_data": [item],
                                               "sampling_params": {"max_new_tokens": args.max_tokens, "temperature": 0}},
                          args.timeout)
        if not isinstance(reply, dict) or "text" not in reply:
            raise LaneError(f"unexpected /generate reply: {json.dumps(reply)[:120]}")
        return reply["text"], time.perf_counter() - start, None

    def passed(self, args, samples):
        return f"all {len(samples)} answers name the square's colour(s)"


if __name__ == "__main__":
    sys.exit(main(VideoLane()))

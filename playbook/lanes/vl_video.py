#!/usr/bin/env python3
"""Qwen-VL video lane: raw file path, http URL, data URL and processor-output inputs; long video with chunked prefill.

Writes an uncompressed AVI of a coloured square sliding across the frame (no ffmpeg
needed), sends it in each requested input style, and checks the answer names the
square's colour (with --long the square changes colour half-way and both colours
must be named). Every request's clip differs (colour, size, row, direction, tint, a
pixel stamp; see _workload) so the multimodal cache cannot answer; --repeat-media sends
one clip, --media-dir your own videos (path, url and data-url styles). Measures
latency, TTFT and req/s; --long repeats the same video so the multimodal embedding
cache is exercised.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _client import ask, http, sse_events  # noqa: E402
from _lane import Lane, LaneError, LaneSkip, Sample, comma_choices  # noqa: E402
from _media import COLOURS, FileServer, Look, avi_frames, avi_video, data_url, moving_square_frames  # noqa: E402
from _runner import main  # noqa: E402
from _scoring import names  # noqa: E402
from _workload import media_files, nonce, pick, rng, slot  # noqa: E402

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

    def validate(self, args):
        if args.media_dir and "processor" in self._modes(args):
            raise LaneError("--video-input processor decodes the lane's own AVI clips; drop --media-dir for it")

    def _slot(self, args, index):
        return 0 if args.long else slot(args, index)  # --long: same video every time, for the cache

    def _colours(self, args, index):
        if args.long:
            return ["red", "blue"]
        return [rng(args, self._slot(args, index), "video").choice(list(COLOURS))]

    def _frames(self, args):
        return args.frames or (192 if args.long else 16)

    def _question(self, args):
        if args.media_dir:
            return "Describe what happens in this video in one or two sentences."
        if args.long:
            return "The square changes colour during the video. Name its colours in the order they appear."
        return "What colour is the moving square, and which way does it move? Answer briefly."

    def describe(self, args):
        clip = (f"a video file from {args.media_dir}" if args.media_dir else
                f"AVI {self._frames(args)} frames {args.size}px @ {args.fps} fps, "
                f"square {'/'.join(self._colours(args, 0))} in request 0")
        return [f"POST /v1/chat/completions stream=true: video as {mode} ({clip}); "
                f"question: {self._question(args)!r}"
                if mode != "processor" else
                "POST /generate stream=true: input_ids + video_data=[HF processor output "
                "(pixel_values_videos, video_grid_thw [[t, h, w]], format=processor_output)] "
                f"built with transformers.AutoProcessor({args.model}) on the client"
                for mode in self._modes(args)]

    def prepare(self, args, workdir):
        self.workdir, self.files, self.server, self.lock = workdir, {}, None, threading.Lock()
        self.processor, self.payloads = None, {}
        self.user = media_files(args.media_dir, "video") if args.media_dir else None
        if "processor" in self._modes(args):
            self.processor = load_processor(args.model)
        if "url" in self._modes(args):
            self.server = FileServer(workdir)

    def close(self):
        if getattr(self, "server", None):
            self.server.close()

    def _video(self, args, index):
        """(file name in the work folder, words the answer must name, MIME type) for one request."""
        if self.user:
            f = pick(self.user, args, index)
            link = os.path.join(self.workdir, f.name)
            with self.lock:
                if not os.path.lexists(link):
                    os.symlink(f.path, link)  # the url style serves the work folder
            return f.name, (f.expected or "").split(), f.mime
        colours = self._colours(args, index)
        with self.lock:
            return self._write(args, self._slot(args, index), colours), colours, "video/avi"

    def _write(self, args, media_slot, colours):
        if media_slot not in self.files:
            look = None if args.long else Look.draw(rng(args, media_slot, "look"), nonce(args, media_slot),
                                                    radius=(0.09, 0.16))
            frames = moving_square_frames(colours, self._frames(args), args.size, look)
            truth = "square " + " then ".join(colours)
            name = f"clip-{media_slot}-{'-'.join(colours)}.avi"
            with open(os.path.join(self.workdir, name), "wb") as fh:
                fh.write(avi_video(frames, args.size, args.size, args.fps, truth))
            self.files[media_slot] = name
        return self.files[media_slot]

    def send(self, args, base, index):
        modes = self._modes(args)
        mode = modes[index % len(modes)]
        name, expected, mime = self._video(args, index)
        path = os.path.join(self.workdir, name)
        meta = {}
        if mode == "processor":
            text, latency, ttft, meta = self._processor_request(args, base, path)
        else:
            url = {"path": path, "url": self.server.url(name) if self.server else "",
                   "data-url": None}[mode] or data_url(mime, open(path, "rb").read())
            parts = [{"type": "video_url", "video_url": {"url": url}}, {"type": "text", "text": self._question(args)}]
            res = ask(base, self.served(args), parts, args)
            text, latency, ttft = res["text"], res["latency"], res["ttft"]
        missing = [c for c in expected if not names(text, c)] + ([] if text.strip() else ["any answer"])
        extra = {k: meta[k] for k in ("prompt_tokens", "completion_tokens") if k in meta}
        return Sample(latency, text, ttft=ttft, mode=mode, ok=not missing, extra=extra,
                      detail=f"{mode}: expected {'/'.join(expected)}, missing {missing}" if missing else "")

    def _processor_request(self, args, base, path):
        """POST /generate with the HF processor's output (SGLang's `format: "processor_output"` input).

        Upstream (vlm_query.ipynb, base_processor.process_and_combine_mm_data) takes the prompt
        from the top-level `input_ids` (already expanded to one video pad token per merged patch)
        and each processor key from the single `video_data` item. The reply is streamed so TTFT
        is the first event with text; each event carries the whole text so far (the default) or,
        with --incremental-streaming-output, only the new piece.
        """
        payload = self._processor_payload(args, path)
        start, text, ttft, meta = time.perf_counter(), "", None, {}
        body = json.dumps(payload).encode()
        with http("POST", base + "/generate", body, {"Content-Type": "application/json"}, args.timeout) as resp:
            for at, event in sse_events(resp):
                piece = event.get("text") or ""
                if piece and ttft is None:
                    ttft = at - start
                text = piece if piece.startswith(text) else text + piece
                meta = event.get("meta_info") or meta
        return text, time.perf_counter() - start, ttft, meta

    def _processor_payload(self, args, path):
        """The /generate body for one clip; built once per clip (client-side work is not measured)."""
        with self.lock:
            if path not in self.payloads:
                self.payloads[path] = self._build_payload(args, path)
            return self.payloads[path]

    def _build_payload(self, args, path):
        import numpy as np

        # AVI DIB frames are bottom-up BGR; the processor wants top-down RGB (T, H, W, 3).
        frames = np.stack([np.frombuffer(f, np.uint8).reshape(args.size, args.size, 3)[::-1, :, ::-1]
                           for f in avi_frames(open(path, "rb").read())])
        msgs = [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": self._question(args)}]}]
        try:
            prompt = self.processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
            # The frames are already the ones to send: no resampling; fps for Qwen3-VL's timestamps.
            meta = {"fps": args.fps, "total_num_frames": len(frames), "frames_indices": list(range(len(frames)))}
            out = self.processor(text=[prompt], videos=[frames], video_metadata=[meta], do_sample_frames=False,
                                 return_tensors="np")
        except Exception as exc:  # noqa: BLE001 - any processor failure is one line
            raise LaneError(f"the HF processor of {args.model} failed on the clip: "
                            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
        missing = [k for k in ("input_ids", "pixel_values_videos", "video_grid_thw") if k not in out]
        if missing:
            raise LaneError(f"the HF processor of {args.model} returned no {missing} (keys: {sorted(out)})")
        # input_ids and attention_mask are the text side: input_ids goes top-level, the mask is unused.
        item = {k: _jsonable(v) for k, v in out.items() if k not in ("input_ids", "attention_mask")}
        item["format"] = "processor_output"
        return {"input_ids": _jsonable(out["input_ids"])[0], "video_data": [item], "stream": True,
                "sampling_params": {"max_new_tokens": args.max_tokens, "temperature": 0}}

    def passed(self, args, samples):
        return f"all {len(samples)} answers name the square's colour(s)"


PIP_PROCESSOR = "python -m pip install numpy 'transformers>=4.57'"


def load_processor(model: str):
    """The model's HF processor; a missing library skips the lane, an unloadable processor is one line."""
    missing = [m for m in ("numpy", "transformers") if not _importable(m)]
    if missing:
        raise LaneSkip(f"--video-input processor needs {' and '.join(missing)} on the client: {PIP_PROCESSOR}")
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(model)
    except Exception as exc:  # noqa: BLE001 - hub, config and version errors all end the run the same way
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise LaneError(f"cannot load the HF processor of {model}: {type(exc).__name__}: {first}"[:300]) from None


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _jsonable(value):
    """Arrays to nested lists; grids stay nested ([[t, h, w]]) because upstream iterates their rows.

    Floats are rounded to 4 decimals: the vision tower runs in bf16, and short decimals keep
    the JSON body a third of full float64 reprs.
    """
    if not hasattr(value, "tolist"):
        return value
    if getattr(value, "dtype", None) is not None and value.dtype.kind == "f":
        import numpy as np

        return np.round(value.astype(np.float64), 4).tolist()
    return value.tolist()


if __name__ == "__main__":
    sys.exit(main(VideoLane()))

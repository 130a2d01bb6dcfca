#!/usr/bin/env python3
"""Qwen-VL video lane: raw file path, http URL, data URL and processor-output inputs; long video with chunked prefill.

Writes an uncompressed AVI of a coloured square sliding across the frame (no ffmpeg
needed), sends it in each requested input style, and checks the answer names the
square's colour (with --long the square changes colour half-way and both colours
must be named). Every request's clip differs (colour, size, row, direction, tint, a
pixel stamp; see _workload) so the multimodal cache cannot answer; --repeat-media sends
one clip, --media-dir your own videos (path, url and data-url styles). Measures
latency, TTFT and req/s; --long repeats the same video so the multimodal embedding
cache is exercised. Processor-output video runs in-process (sglang.Engine with
tensors; see _processor.py for why HTTP cannot carry it).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _client import chat_call, chat_stream  # noqa: E402
from _lane import Call, Lane, LaneError, Sample, comma_choices  # noqa: E402
from _media import COLOURS, FileServer, Look, avi_video, data_url, moving_square_frames  # noqa: E402
from _processor import WHY_IN_PROCESS, generate_kwargs, load_processor, read_stream  # noqa: E402
from _runner import main  # noqa: E402
from _scoring import names  # noqa: E402
from _workload import media_files, nonce, pick, rng, slot  # noqa: E402

MODES = ("path", "url", "data-url", "processor")
TRANSPORTS = ("cpu", "cuda_ipc", "cuda_vmm")
# sglang#30904 (first released in 0.5.16) added --mm-feature-transport and deprecated
# --keep-mm-feature-on-device (= cuda_ipc); 0.5.23 no longer has the old flag.
TRANSPORT_FLAG_SINCE = (0, 5, 16)


def version_tuple(text: str) -> tuple[int, ...]:
    """(0, 5, 16) from "0.5.16", "v0.5.16.post1" or "0.5.18rc0"; () when unreadable."""
    return tuple(int(m) for m in re.findall(r"\d+", text.lstrip("v").split("rc")[0].split(".post")[0])[:3])


@functools.cache  # once per process: dossier's lane interpreter runs every --dry-run in one
def installed_sglang() -> str | None:
    """The sglang version installed for this interpreter, if any (no import of sglang)."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:
        return None
    try:
        return version("sglang")
    except PackageNotFoundError:
        return None


def transport_flags(transport: str | None, sglang_version: str | None) -> list[str]:
    """The launch flags that place multimodal features as asked, in the target sglang's spelling.

    No --feature-transport: no flag, so the server keeps its default (CPU) and an OOM study
    measures the default placement. An unknown version is taken to be a current one.
    """
    if transport is None:
        return []
    if sglang_version is None or version_tuple(sglang_version) >= TRANSPORT_FLAG_SINCE:
        return ["--mm-feature-transport", transport]
    if transport == "cuda_ipc":
        return ["--keep-mm-feature-on-device"]
    if transport == "cpu":
        return []  # before 0.5.16 features were always moved to the CPU unless kept on device
    raise ValueError(f"--feature-transport {transport} needs sglang >= 0.5.16 (--sglang-version {sglang_version})")


class VideoLane(Lane):
    """Qwen-VL video input (file path, URL, data URL, processor output; long video)."""

    name = "vl-video"
    default_model = "Qwen/Qwen3-VL-8B-Instruct"
    in_process_why = WHY_IN_PROCESS

    def add_arguments(self, p):
        p.add_argument("--video-input", default="path,url,data-url",
                       help=f"Comma-separated input styles, cycled per request: {', '.join(MODES)} "
                            "(processor runs alone, in-process).")
        p.add_argument("--long", action="store_true", help="Long video (192 frames) with chunked prefill.")
        p.add_argument("--frames", type=int, default=None, help="Frames (default 16, or 192 with --long).")
        p.add_argument("--fps", type=int, default=2)
        p.add_argument("--size", type=int, default=224, help="Frame side in pixels (multiple of 28).")
        p.add_argument("--chunked-prefill-size", type=int, default=2048, help="With --long.")
        p.add_argument("--feature-transport", choices=TRANSPORTS, default=None,
                       help="Where the server keeps multimodal features (default: the server's own, CPU).")
        p.add_argument("--sglang-version", default=None,
                       help="sglang version the launch flags are spelled for (default: the installed one, "
                            "else a current one).")

    def label(self, args):
        if self._modes(args) == ["processor"]:
            return "vl-video-processor"
        return "vl-long-video-chunked" if args.long else "vl-video"

    def _modes(self, args):
        modes = comma_choices(self, "--video-input", args.video_input, MODES)
        if "processor" in modes and len(modes) > 1:
            raise SystemExit(f"lane {self.name}: error: --video-input processor runs in-process "
                             "(sglang.Engine) and cannot be mixed with the HTTP styles")
        return modes

    def server_command(self, args):
        cmd = super().server_command(args)
        if args.long:
            cmd += ["--chunked-prefill-size", str(args.chunked_prefill_size)]
        try:
            return cmd + transport_flags(args.feature_transport, args.sglang_version or installed_sglang())
        except ValueError as exc:
            raise SystemExit(f"lane {self.name}: error: {exc}") from None

    def engine_kwargs(self, args):
        if self._modes(args) != ["processor"]:
            return None
        kwargs = {"model_path": args.model}
        if args.long:
            kwargs["chunked_prefill_size"] = args.chunked_prefill_size
        if args.feature_transport:
            kwargs["mm_feature_transport"] = args.feature_transport
        return kwargs

    def validate(self, args):
        if args.media_dir and "processor" in self._modes(args):
            raise LaneError("--video-input processor decodes the lane's own AVI clips; drop --media-dir for it")

    def _slot(self, args, index):
        return 0 if args.long else slot(args, index)  # --long: same video every time, for the cache

    def _colours(self, args, index):
        if args.long:
            return ["red", "blue"]
        return [rng(args, self._slot(args, index), "video").choice(list(COLOURS))]

    def media(self, args) -> str:
        if args.long and not args.media_dir:
            # _slot pins --long to slot 0: one clip, so the multimodal cache is what is exercised.
            return (f"the same generated {self._frames(args)}-frame clip every request (--long, seed {args.seed}): "
                    "the multimodal cache can answer after the first")
        return super().media(args)

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
        return [f"POST /v1/chat/completions stream=true: video as {mode} ({clip}); question: {self._question(args)!r}"
                if mode != "processor" else
                f"sglang.Engine.generate(input_ids, video_data=[HF processor output as tensors (pixel_values_videos, "
                f"video_grid_thw), format=processor_output], stream=True) in-process; {clip}; "
                f"processor: transformers.AutoProcessor({args.model})"
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

    def _mode(self, args, index):
        modes = self._modes(args)
        return modes[index % len(modes)]

    def _request(self, args, index):
        """(input style, the Call, words the answer must name) of one request, from its own clip."""
        mode = self._mode(args, index)
        name, expected, mime = self._video(args, index)
        path = os.path.join(self.workdir, name)
        if mode == "processor":
            return mode, Call("engine", method="", body=self._engine_call(args, path)), expected
        url = {"path": path, "url": self.server.url(name) if self.server else "",
               "data-url": None}[mode] or data_url(mime, open(path, "rb").read())
        parts = [{"type": "video_url", "video_url": {"url": url}}, {"type": "text", "text": self._question(args)}]
        return mode, chat_call(self.served(args), parts, args), expected

    def calls(self, args, index):
        return [self._request(args, index)[1]]

    def _engine_call(self, args, path):
        """Engine.generate's arguments for one clip; built once per clip (client-side work is not measured)."""
        with self.lock:
            if path not in self.payloads:
                with open(path, "rb") as fh:
                    self.payloads[path] = generate_kwargs(self.processor, args.model, fh.read(), args.size, args.fps,
                                                          self._question(args), args.max_tokens)
            return self.payloads[path]

    def send(self, args, base, index):
        mode, call, expected = self._request(args, index)
        meta = {}
        if call.kind == "engine":
            start = time.perf_counter()
            try:
                chunks = self.engine.generate(**call.body)
                text, ttft, meta = read_stream(chunks, start, time.perf_counter)
            except (ValueError, RuntimeError, TypeError) as exc:
                raise LaneError(f"sglang.Engine.generate refused the processor output: {type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}"[:300]) from None
            latency = time.perf_counter() - start
        else:
            res = chat_stream(base, call.body, args.timeout)
            text, latency, ttft = res["text"], res["latency"], res["ttft"]
        missing = [c for c in expected if not names(text, c)] + ([] if text.strip() else ["any answer"])
        extra = {k: meta[k] for k in ("prompt_tokens", "completion_tokens") if k in meta}
        return Sample(latency, text, ttft=ttft, mode=mode, ok=not missing, extra=extra,
                      detail=f"{mode}: expected {'/'.join(expected)}, missing {missing}" if missing else "")

    def passed(self, args, samples):
        return f"all {len(samples)} answers name the square's colour(s)"


if __name__ == "__main__":
    sys.exit(main(VideoLane()))

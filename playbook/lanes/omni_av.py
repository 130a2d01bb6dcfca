#!/usr/bin/env python3
"""Qwen3-Omni thinker lane: audio + video input, and audio carried inside the video (use_audio_in_video).

Sends a generated AVI (coloured square) with a spoken question, either as a separate
audio part or as the video's own PCM track with use_audio_in_video=true, to
/v1/chat/completions; checks the answer names the square's colour. Measures latency,
TTFT and req/s.
"""

from __future__ import annotations

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _audio import speech, wav_pcm  # noqa: E402
from _client import ask  # noqa: E402
from _lane import Lane, LaneError, Sample, comma_choices  # noqa: E402
from _media import COLOURS, Look, avi_video, data_url, moving_square_frames  # noqa: E402
from _runner import main  # noqa: E402
from _scoring import names  # noqa: E402
from _workload import nonce, rng, slot  # noqa: E402

QUESTION = "What colour is the square in the video?"
MODES = ("audio+video", "audio-in-video")


class OmniAVLane(Lane):
    """Qwen3-Omni audio + video input (separate audio and audio-in-video)."""

    name = "omni-audio-video"
    default_model = "Qwen/Qwen3-Omni-30B-A3B-Instruct"

    def add_arguments(self, p):
        p.add_argument("--inputs", default="audio+video,audio-in-video",
                       help=f"Comma-separated input styles, cycled per request: {', '.join(MODES)}.")
        p.add_argument("--tp", type=int, default=1)
        p.add_argument("--frames", type=int, default=8)
        p.add_argument("--audio", dest="audio_file", help="Spoken question WAV (default: espeak-ng, else a tone).")

    def _modes(self, args):
        return comma_choices(self, "--inputs", args.inputs, MODES)

    def validate(self, args):
        if args.media_dir:
            raise LaneError("omni-audio-video checks the colour of its own generated clips; --media-dir does not apply")

    def server_command(self, args):
        cmd = super().server_command(args)
        return cmd + (["--tp", str(args.tp)] if args.tp > 1 else [])

    def describe(self, args):
        return [f"POST /v1/chat/completions stream=true: {mode}: AVI {args.frames} frames 224px"
                + (" with a 16 kHz PCM track, use_audio_in_video=true" if mode == "audio-in-video"
                   else " + WAV audio_url (spoken question)")
                + f"; text: {self._text()!r}" for mode in self._modes(args)]

    def _text(self):
        return f"Answer the spoken question about the video in one sentence. (If you cannot hear it: {QUESTION})"

    def prepare(self, args, workdir):
        self._modes(args)
        self.voice = speech(QUESTION, args.audio_file)
        self.cache, self.lock = {}, threading.Lock()

    def _media(self, args, index, colour, mode):
        with self.lock:
            key = (slot(args, index), mode)
            if key not in self.cache:  # each request's clip differs (see _workload), unless --repeat-media
                pcm, rate = wav_pcm(self.voice.wav)
                look = Look.draw(rng(args, index, "look"), nonce(args, index), radius=(0.09, 0.16))
                frames = moving_square_frames([colour], args.frames, 224, look)
                video = avi_video(frames, 224, 224, 2, f"{colour} square",
                                  audio=pcm if mode == "audio-in-video" else None, audio_rate=rate)
                self.cache[key] = data_url("video/avi", video)
            return self.cache[key]

    def send(self, args, base, index):
        modes = self._modes(args)
        mode = modes[index % len(modes)]
        colour = rng(args, index, "video").choice(list(COLOURS))
        parts = [{"type": "video_url", "video_url": {"url": self._media(args, index, colour, mode)}}]
        if mode == "audio+video":
            parts.append({"type": "audio_url", "audio_url": {"url": data_url("audio/wav", self.voice.wav)}})
        parts.append({"type": "text", "text": self._text()})
        extra = {"use_audio_in_video": True} if mode == "audio-in-video" else {}
        res = ask(base, self.served(args), parts, args, **extra)
        ok = names(res["text"], colour)
        return Sample(res["latency"], res["text"], ttft=res["ttft"], mode=mode, ok=ok,
                      detail="" if ok else f"{mode}: expected {colour}")

    def passed(self, args, samples):
        return f"all {len(samples)} answers name the square's colour (speech: {self.voice.source})"


if __name__ == "__main__":
    sys.exit(main(OmniAVLane()))

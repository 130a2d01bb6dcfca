#!/usr/bin/env python3
"""Qwen3-Omni thinker lane: audio + video input, and audio carried inside the video (use_audio_in_video).

Every request gets its own secret word (14 in turn, from --seed), spoken by espeak-ng,
and its own AVI of a coloured square (see _workload). The word goes either as a separate audio part, or as the video's own PCM
track with use_audio_in_video=true. The text part asks for the word and the colour and
carries neither, so only a model that heard the audio can name the word: a server that
drops the video's track (Qwen3-Omni's processor passes use_audio_in_video=False at the pin)
fails the check instead of passing on the colour alone. Measures latency, TTFT and req/s.
"""

from __future__ import annotations

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _audio import Speech, speech, wav_pcm  # noqa: E402
from _client import chat_call, chat_stream  # noqa: E402
from _lane import Lane, LaneError, LaneSkip, Sample, comma_choices  # noqa: E402
from _media import COLOURS, Look, avi_video, data_url, moving_square_frames  # noqa: E402
from _runner import main  # noqa: E402
from _scoring import names  # noqa: E402
from _workload import nonce, rng, slot  # noqa: E402

MODES = ("audio+video", "audio-in-video")
WORDS = ("anchor", "bamboo", "cactus", "dolphin", "falcon", "glacier", "harbor", "lantern",
         "marble", "pepper", "quartz", "saddle", "tulip", "walnut")
SPOKEN = "The secret word is {word}."
QUESTIONS = {
    "audio+video": "The audio clip says a secret word. What is the secret word, and what colour is the square "
                   "in the video? Answer in one short sentence.",
    "audio-in-video": "The video's own soundtrack says a secret word. What is the secret word, and what colour "
                      "is the square in the video? Answer in one short sentence.",
}
# How an AVI's truth tag (see _media) says what its soundtrack speaks, for the stand-in server.
HEARD = " | heard: "


class OmniAVLane(Lane):
    """Qwen3-Omni audio + video input (separate audio and audio-in-video)."""

    name = "omni-audio-video"
    default_model = "Qwen/Qwen3-Omni-30B-A3B-Instruct"

    def add_arguments(self, p):
        p.add_argument("--inputs", default="audio+video,audio-in-video",
                       help=f"Comma-separated input styles, cycled per request: {', '.join(MODES)}.")
        p.add_argument("--tp", type=int, default=1)
        p.add_argument("--frames", type=int, default=8)
        p.add_argument("--audio", dest="audio_file", help="A WAV of someone saying --word (default: espeak-ng).")
        p.add_argument("--word", help="The word --audio says.")

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
                + (" whose 16 kHz PCM track says the secret word, use_audio_in_video=true" if mode == "audio-in-video"
                   else " + WAV audio_url saying the secret word")
                + f"; text: {QUESTIONS[mode]!r}; the answer must name the word and the colour"
                for mode in self._modes(args)]

    def prepare(self, args, workdir):
        self._modes(args)
        if bool(args.audio_file) != bool(args.word):
            raise SystemExit(f"lane {self.name}: error: --audio and --word go together")
        self.voices: dict[str, Speech] = {}
        self.cache, self.lock, self.audio_file = {}, threading.Lock(), args.audio_file
        probe = self._voice(self._word(args, 0))
        if probe.source == "tone":
            raise LaneSkip("the secret word must be spoken: install espeak-ng (apt-get install espeak-ng) "
                           "or pass --audio WAV --word WORD; a tone cannot carry a word")

    def _word(self, args, index):
        """The secret word of one request: --word, or the next word for its media slot (see _workload)."""
        return args.word or WORDS[(args.seed + slot(args, index)) % len(WORDS)]

    def _voice(self, word):
        with self.lock:
            if word not in self.voices:
                self.voices[word] = speech(SPOKEN.format(word=word), self.audio_file)
            return self.voices[word]

    def _video(self, args, index, colour, voice, mode):
        """The AVI as a data URL; audio-in-video carries the spoken word as its PCM track."""
        with self.lock:
            key = (slot(args, index), mode)
            if key not in self.cache:  # each request's clip differs (see _workload), unless --repeat-media
                pcm, rate = wav_pcm(voice.wav)
                inside = mode == "audio-in-video"
                truth = f"square {colour}" + (HEARD + voice.reference if inside else "")
                look = Look.draw(rng(args, index, "look"), nonce(args, index), radius=(0.09, 0.16))
                frames = moving_square_frames([colour], args.frames, 224, look)
                video = avi_video(frames, 224, 224, 2, truth, audio=pcm if inside else None, audio_rate=rate)
                self.cache[key] = data_url("video/avi", video)
            return self.cache[key]

    def _pick(self, args, index):
        modes = self._modes(args)
        return modes[index % len(modes)], rng(args, index, "video").choice(list(COLOURS)), self._word(args, index)

    def calls(self, args, index):
        mode, colour, word = self._pick(args, index)
        voice = self._voice(word)
        parts = [{"type": "video_url", "video_url": {"url": self._video(args, index, colour, voice, mode)}}]
        if mode == "audio+video":
            parts.append({"type": "audio_url", "audio_url": {"url": data_url("audio/wav", voice.wav)}})
        parts.append({"type": "text", "text": QUESTIONS[mode]})
        extra = {"use_audio_in_video": True} if mode == "audio-in-video" else {}
        return [chat_call(self.served(args), parts, args, **extra)]

    def send(self, args, base, index):
        mode, colour, word = self._pick(args, index)
        res = chat_stream(base, self.calls(args, index)[0].body, args.timeout)
        missing = [w for w in (word, colour) if not names(res["text"], w)]
        detail = ""
        if missing:
            detail = f"{mode}: expected the word {word!r} and the colour {colour}; missing {missing}"
            if word in missing and colour not in missing:
                detail += ("; the model saw the video but did not hear the word: the server dropped the "
                           + ("video's audio track" if mode == "audio-in-video" else "audio part"))
        return Sample(res["latency"], res["text"], ttft=res["ttft"], mode=mode, ok=not missing, detail=detail)

    def passed(self, args, samples):
        sources = {v.source for v in self.voices.values()}
        return (f"all {len(samples)} answers name the spoken word and the square's colour "
                f"(speech: {', '.join(sorted(sources))})")


if __name__ == "__main__":
    sys.exit(main(OmniAVLane()))

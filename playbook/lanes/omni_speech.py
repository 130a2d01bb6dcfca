#!/usr/bin/env python3
"""sglang-omni Qwen3-Omni speech output lane: time to first audio (TTFA) and real-time factor (RTF).

Asks the thinker+talker pipeline to say a known sentence with modalities
["text", "audio"] on /v1/chat/completions (or streams /v1/audio/speech with
--endpoint speech), timing the first audio chunk and the whole reply. RTF is
wall time over seconds of audio produced. Checks the text matches the sentence
(WER) and that audio came back.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _audio import wav_pcm  # noqa: E402
from _client import chat_call, chat_stream, http  # noqa: E402
from _lane import Call, Lane, LaneError, Sample  # noqa: E402
from _runner import main  # noqa: E402
from _scoring import word_error_rate  # noqa: E402

SENTENCE = "Hello from the speech validation lane, one two three."


def audio_seconds(chunk: bytes, fmt: str, rate: int) -> float:
    """Seconds in one audio chunk: a WAV file per chunk, else raw 16-bit PCM at `rate`."""
    if chunk[:4] == b"RIFF":
        pcm, r = wav_pcm(chunk)
        return len(pcm) / 2 / r
    if fmt in ("pcm", "pcm16", "") and rate:
        return len(chunk) / 2 / rate
    raise LaneError(f"cannot measure audio chunk in format {fmt!r}; use a wav or pcm response format")


class OmniSpeechLane(Lane):
    """sglang-omni Qwen3-Omni speech output (TTFA, RTF)."""

    name = "omni-speech"
    repo = "sglang-omni"
    default_model = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
    default_port = 8000
    default_served = "qwen3-omni"

    def add_arguments(self, p):
        p.add_argument("--endpoint", choices=("chat", "speech"), default="chat",
                       help="chat: /v1/chat/completions with audio output; speech: /v1/audio/speech stream=true.")
        p.add_argument("--sentence", default=SENTENCE)
        p.add_argument("--max-wer", type=float, default=0.5, help="Text-vs-sentence WER limit (chat endpoint).")
        p.add_argument("--min-audio", type=float, default=0.5, help="Fail when a reply has less audio (s).")
        p.set_defaults(max_tokens=128)

    def server_command(self, args):
        # Speech mode is the multi-GPU example launcher, run from an sglang-omni checkout.
        return ["python", "examples/run_qwen3_omni_speech_server.py", "--model-path", args.model,
                "--port", str(args.port), "--model-name", self.served(args)]

    def describe(self, args):
        if args.endpoint == "speech":
            return [f"POST /v1/audio/speech stream=true response_format=pcm: input {args.sentence!r}; "
                    "raw 16-bit PCM body, rate in X-Sample-Rate"]
        return [f"POST /v1/chat/completions stream=true modalities=[text, audio] audio.format=wav: "
                f"'Repeat exactly: {args.sentence}'; text WER <= {args.max_wer}, audio >= {args.min_audio}s"]

    def calls(self, args, index):
        if args.endpoint == "speech":
            # sglang-omni streams speech only as raw PCM (speech_service: stream=true requires pcm).
            return [Call("speech", path="/v1/audio/speech", body={
                "model": self.served(args), "input": args.sentence, "voice": "default",
                "response_format": "pcm", "stream": True})]
        return [chat_call(self.served(args), f"Repeat exactly this sentence and nothing else: {args.sentence}",
                          args, modalities=["text", "audio"], audio={"format": "wav"})]

    def send(self, args, base, index):
        call = self.calls(args, index)[0]
        if args.endpoint == "speech":
            return self._speech(args, base, call)
        res = chat_stream(base, call.body, args.timeout)
        seconds = sum(audio_seconds(base64.b64decode(c), "wav", 0) for c in res["audio_b64"])
        wer = word_error_rate(args.sentence, res["text"])
        ok = wer <= args.max_wer and seconds >= args.min_audio
        return Sample(res["latency"], res["text"], ttft=res["ttft"], ttfa=res["ttfa"], audio_seconds=seconds or None,
                      ok=ok, detail="" if ok else f"text WER {wer:.2f}, {seconds:.2f}s of audio",
                      extra={"audio_chunks": len(res["audio_b64"])})

    def _speech(self, args, base, call):
        """Read the raw PCM stream: time to the first bytes, seconds from X-Sample-Rate (16-bit mono)."""
        start, ttfa, size, chunks = time.perf_counter(), None, 0, 0
        with http("POST", base + call.path, json.dumps(call.body).encode(), {"Content-Type": "application/json"},
                  args.timeout) as resp:
            rate = int(resp.headers.get("X-Sample-Rate") or 0)
            if not rate or "audio/pcm" not in resp.headers.get("Content-Type", ""):
                raise LaneError(f"speech stream answered {resp.headers.get('Content-Type')!r} without X-Sample-Rate; "
                                "expected audio/pcm")
            while piece := resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536):
                ttfa = ttfa if ttfa is not None else time.perf_counter() - start
                size, chunks = size + len(piece), chunks + 1
        seconds = size / 2 / rate
        ok = seconds >= args.min_audio
        return Sample(time.perf_counter() - start, "", ttfa=ttfa, audio_seconds=seconds or None, ok=ok,
                      detail="" if ok else f"{seconds:.2f}s of audio", extra={"audio_chunks": chunks})

    def passed(self, args, samples):
        return f"all {len(samples)} replies carried audio (>= {args.min_audio}s) and the sentence"


if __name__ == "__main__":
    sys.exit(main(OmniSpeechLane()))

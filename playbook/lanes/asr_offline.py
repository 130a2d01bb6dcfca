#!/usr/bin/env python3
"""Qwen3-ASR offline transcription lane: WER (jiwer) and throughput via /v1/audio/transcriptions."""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _asr import AsrLane  # noqa: E402
from _lane import LaneError, Sample  # noqa: E402
from _runner import main  # noqa: E402


class AsrOfflineLane(AsrLane):
    """Qwen3-ASR offline transcription (WER, latency, req/s)."""

    name = "asr-offline"

    def describe(self, args):
        return [f"POST /v1/audio/transcriptions multipart (file, model={self.served(args)}, response_format=json): "
                f"{self.describe_audio(args)}; WER must be <= {args.max_wer}"]

    def calls(self, args, index):
        return [self.transcription_call(args, self.clip(args, index))]

    def send(self, args, base, index):
        clip = self.clip(args, index)
        start = time.perf_counter()
        with self.transcribe(args, base, self.calls(args, index)[0]) as resp:
            raw = resp.read()
        latency = time.perf_counter() - start
        try:
            text = json.loads(raw)["text"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise LaneError(f"transcription reply has no 'text': {raw[:120]!r}") from None
        return Sample(latency, text, audio_seconds=clip.seconds, extra={"reference": clip.reference})


if __name__ == "__main__":
    sys.exit(main(AsrOfflineLane()))

#!/usr/bin/env python3
"""Qwen3-ASR HTTP streaming lane: /v1/audio/transcriptions with stream=true; time to first text and WER."""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _asr import AsrLane  # noqa: E402
from _client import sse_events  # noqa: E402
from _lane import LaneError, Sample  # noqa: E402
from _runner import main  # noqa: E402


class AsrStreamLane(AsrLane):
    """Qwen3-ASR HTTP streaming transcription (time to first text, WER)."""

    name = "asr-http-stream"

    def describe(self, args):
        return [f"POST /v1/audio/transcriptions multipart stream=true (SSE, choices[0].delta.content): "
                f"{self.describe_audio(args)}; WER must be <= {args.max_wer}"]

    def calls(self, args, index):
        return [self.transcription_call(args, self.clip(args, index), stream="true")]

    def send(self, args, base, index):
        clip = self.clip(args, index)
        start, ttft, parts = time.perf_counter(), None, []
        with self.transcribe(args, base, self.calls(args, index)[0]) as resp:
            if "text/event-stream" not in resp.headers.get("Content-Type", ""):
                raise LaneError(f"stream=true answered {resp.headers.get('Content-Type')!r}, not text/event-stream")
            for at, event in sse_events(resp):
                for choice in event.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content") or choice.get("text")
                    if piece:
                        ttft = ttft if ttft is not None else at - start
                        parts.append(piece)
        return Sample(time.perf_counter() - start, "".join(parts), ttft=ttft, audio_seconds=clip.seconds,
                      extra={"reference": clip.reference})


if __name__ == "__main__":
    sys.exit(main(AsrStreamLane()))

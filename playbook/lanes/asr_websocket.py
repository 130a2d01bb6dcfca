#!/usr/bin/env python3
"""Qwen3-ASR websocket streaming lane: the OpenAI Realtime transcription protocol on /v1/realtime.

Per request: open a session, send session.update (pcm16, no server VAD), append the
clip as base64 PCM chunks (paced at --pace x real time), commit, and collect
conversation.item.input_audio_transcription.delta/.completed events. Measures time to
first text (from the first audio chunk), time from commit to the final transcript, WER.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _asr import AsrLane  # noqa: E402
from _audio import resample, wav_pcm  # noqa: E402
from _lane import Call, LaneError, Sample  # noqa: E402
from _runner import main  # noqa: E402

RATE = 16000


class AsrWebsocketLane(AsrLane):
    """Qwen3-ASR websocket streaming transcription (time to first text, final latency, WER)."""

    name = "asr-websocket-stream"

    def add_arguments(self, p):
        super().add_arguments(p)
        p.add_argument("--ws-url", help="Websocket URL (default: the server URL with ws:// and /v1/realtime).")
        p.add_argument("--chunk-ms", type=int, default=200, help="Audio per input_audio_buffer.append.")
        p.add_argument("--pace", type=float, default=1.0, help="Send speed as a multiple of real time (0: no pacing).")

    def _ws_url(self, args, base):
        if args.ws_url:
            return args.ws_url
        return base.replace("https://", "wss://").replace("http://", "ws://") + "/v1/realtime"

    def describe(self, args):
        where = args.ws_url or "ws://<server>/v1/realtime"
        return [f"WS {where}: session.update (audio/pcm {RATE} Hz, turn_detection null) -> "
                f"input_audio_buffer.append x N ({args.chunk_ms} ms base64 PCM, pace {args.pace}x) -> "
                f"input_audio_buffer.commit; {self.describe_audio(args)}; WER must be <= {args.max_wer}"]

    def prepare(self, args, workdir):
        try:
            import websockets.sync.client
        except ImportError:
            raise LaneError("this lane needs websockets: install the lanes extra "
                            "(pip install 'sglang-qwen-dossier[lanes]')") from None
        del websockets  # imported only to fail fast, before the server starts
        super().prepare(args, workdir)
        other = [f.name for f in getattr(self, "files", []) if f.mime != "audio/wav"] if args.media_dir else []
        if other:  # the realtime protocol carries PCM, and only a WAV decodes to PCM without ffmpeg
            raise LaneError(f"the websocket lane streams PCM: --media-dir needs .wav files, not {other[0]}")

    def calls(self, args, index):
        """session.update, the clip as base64 PCM appends of --chunk-ms, then commit."""
        pcm, rate = wav_pcm(self.clip(args, index).wav)
        pcm = resample(pcm, rate, RATE)
        step = RATE * 2 * args.chunk_ms // 1000
        events = [{"type": "session.update", "session": {"type": "transcription", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": RATE}, "turn_detection": None}}}}]
        events += [{"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm[off:off + step]).decode()}
                   for off in range(0, len(pcm), step)]
        events.append({"type": "input_audio_buffer.commit"})
        return [Call("realtime", method="WS", path="/v1/realtime", events=events)]

    def send(self, args, base, index):
        from websockets.exceptions import WebSocketException
        from websockets.sync.client import connect

        clip = self.clip(args, index)
        update, *appends, commit = self.calls(args, index)[0].events
        url = self._ws_url(args, base)
        try:
            with connect(url, open_timeout=args.timeout, max_size=None) as ws:
                self._expect(ws, "session.created", args.timeout)
                ws.send(json.dumps(update))
                self._expect(ws, "session.updated", args.timeout)
                start = time.perf_counter()
                ttft, parts = None, []
                for k, event in enumerate(appends):
                    if args.pace > 0:  # pace like a microphone would
                        time.sleep(max(0.0, start + k * args.chunk_ms / 1000 / args.pace - time.perf_counter()))
                    ws.send(json.dumps(event))
                    ttft = self._drain(ws, parts, ttft, start, block=False)
                committed = time.perf_counter()
                ws.send(json.dumps(commit))
                final = None
                while final is None:
                    event = json.loads(ws.recv(timeout=args.timeout))
                    ttft, final = self._handle(event, parts, ttft, start)
        except (OSError, WebSocketException, TimeoutError) as exc:
            raise LaneError(f"websocket {url}: {exc or type(exc).__name__}") from None
        end = time.perf_counter()
        seconds = sum(len(base64.b64decode(e["audio"])) for e in appends) / 2 / RATE
        return Sample(end - start, final, ttft=ttft, audio_seconds=seconds,
                      extra={"reference": clip.reference, "final_after_commit_s": round(end - committed, 4),
                             "deltas": len(parts)})

    def _expect(self, ws, kind, timeout):
        event = json.loads(ws.recv(timeout=timeout))
        if event.get("type") == "error":
            raise LaneError(f"server error event: {event.get('error', {}).get('message', event)}")
        if event.get("type") != kind:
            raise LaneError(f"expected {kind}, got {event.get('type')!r}")

    def _drain(self, ws, parts, ttft, start, block):
        while True:
            try:
                raw = ws.recv(timeout=0 if not block else None)
            except TimeoutError:
                return ttft
            ttft, _ = self._handle(json.loads(raw), parts, ttft, start)

    def _handle(self, event, parts, ttft, start):
        kind = event.get("type", "")
        if kind in ("error", "conversation.item.input_audio_transcription.failed"):
            err = event.get("error") or {}
            raise LaneError(f"server {kind}: {err.get('message', err) if isinstance(err, dict) else err}")
        if kind == "conversation.item.input_audio_transcription.delta" and event.get("delta"):
            parts.append(event["delta"])
            ttft = ttft if ttft is not None else time.perf_counter() - start
        if kind == "conversation.item.input_audio_transcription.completed":
            transcript = event.get("transcript") or "".join(parts)
            return (ttft if ttft is not None else time.perf_counter() - start), transcript
        return ttft, None

    def check(self, args, samples):
        ok, message, extra = super().check(args, samples)
        after = [s.extra["final_after_commit_s"] for s in samples]
        extra["final_after_commit_p50_s"] = round(sorted(after)[len(after) // 2], 4)
        return ok, message, extra


if __name__ == "__main__":
    sys.exit(main(AsrWebsocketLane()))

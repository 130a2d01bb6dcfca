"""Every lane's response parsing, fed replies built from upstream's response models.

A replay server on loopback answers with bytes made from the sglang release's pydantic /
msgspec response classes (checked against the pinned facts too) and, for sglang-omni, from
dicts the pinned facts accept. Each lane's own `send` parses them; the test also checks that
what `send` transmitted is exactly what its builder (`Lane.calls`) made.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from lane_harness import BY_ID, client_tools, new_lane  # noqa: E402
from test_lane_contracts import target  # noqa: E402

from dossier.upstream_facts import OMNI_FILES, SGLANG_FILES  # noqa: E402

TEXT = "The square is red and moves to the right"


def _sse(events: list[str]) -> bytes:
    return b"".join(f"data: {e}\n\n".encode() for e in events) + b"data: [DONE]\n\n"


def _pinned_accepts(repo: str, file: str, model: str, payload: dict) -> dict:
    """The payload, after asserting the pinned facts of `model` find nothing wrong with it."""
    problems = [p for p in target(repo, "pinned").schema(file).check_model(payload, model) if not p.unknown]
    assert not problems, problems
    return payload


def chat_stream(text: str = TEXT) -> bytes:
    p = target("sglang", "release").modules["protocol"]
    deltas = [p.DeltaMessage(role="assistant", content="")] + [p.DeltaMessage(content=w) for w in _pieces(text)]
    chunks = [p.ChatCompletionStreamResponse(id="c1", model="m", choices=[
        p.ChatCompletionResponseStreamChoice(index=0, delta=d, finish_reason=None)]) for d in deltas]
    chunks.append(p.ChatCompletionStreamResponse(id="c1", model="m", choices=[
        p.ChatCompletionResponseStreamChoice(index=0, delta=p.DeltaMessage(), finish_reason="stop")]))
    events = [c.model_dump_json() for c in chunks]
    for e in events:
        _pinned_accepts("sglang", SGLANG_FILES["protocol"], "ChatCompletionStreamResponse", json.loads(e))
    return _sse(events)


def transcription(text: str, stream: bool) -> bytes:
    p = target("sglang", "release").modules["protocol"]
    if not stream:
        body = p.TranscriptionResponse(text=text, usage=p.TranscriptionUsage(seconds=3)).model_dump_json()
        _pinned_accepts("sglang", SGLANG_FILES["protocol"], "TranscriptionResponse", json.loads(body))
        return body.encode()
    chunks = [p.TranscriptionStreamResponse(id="t1", model="q", choices=[
        p.TranscriptionStreamChoice(delta=p.DeltaMessage(content=w), finish_reason=None)]) for w in _pieces(text)]
    chunks.append(p.TranscriptionStreamResponse(id="t1", model="q", choices=[
        p.TranscriptionStreamChoice(delta=p.DeltaMessage(), finish_reason="stop")]))
    events = [c.model_dump_json() for c in chunks]
    for e in events:
        _pinned_accepts("sglang", SGLANG_FILES["protocol"], "TranscriptionStreamResponse", json.loads(e))
    return _sse(events)


def omni_chat_stream(text: str, audio_chunks: list[str]) -> bytes:
    """sglang-omni's chat stream: model_dump(exclude_none=True) chunks, audio as a WAV per delta."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "qwen3-omni"}
    deltas = [{"role": "assistant"}] + [{"content": w} for w in _pieces(text)] + \
        [{"audio": {"id": "audio-1", "data": a}} for a in audio_chunks]
    events = [dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}]) for d in deltas]
    events.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    for e in events:
        _pinned_accepts("sglang-omni", OMNI_FILES["protocol"], "ChatCompletionStreamResponse", e)
    return _sse([json.dumps(e) for e in events])


def _pieces(text: str) -> list[str]:
    return [(" " if i else "") + w for i, w in enumerate(text.split())]


class Replay:
    """Loopback HTTP server: POST path -> (content type, body, headers); records what it received."""

    def __init__(self, routes: dict):
        self.routes, self.received = routes, []
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(200)
                self.end_headers()

            def do_POST(self):
                replay.received.append((self.headers.get("Content-Type", ""),
                                        self.rfile.read(int(self.headers.get("Content-Length") or 0))))
                ctype, body, headers = replay.routes[self.path]
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Connection", "close")
                self.end_headers()
                for i in range(0, len(body), 4096):  # in pieces, as a stream arrives
                    self.wfile.write(body[i:i + 4096])
                    self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # a short poll keeps shutdown() quick (the default waits up to half a second)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _send(lane_id: str, routes: dict, *extra: str):
    """(sample, what the server received, what the lane's builder made) for request 0."""
    replay = Replay(routes)
    lane, args = new_lane(lane_id, "--server-url", replay.url, *extra)
    try:
        with client_tools(), tempfile.TemporaryDirectory() as workdir:
            lane.prepare(args, workdir)
            sample = lane.send(args, replay.url, 0)
            return sample, replay.received, lane.calls(args, 0)[0]
    finally:
        lane.close()
        replay.close()


CHAT_LANES = [lid for lid, lane in BY_ID.items() if lane["script"].endswith(("vl_image.py", "omni_av.py"))
              or lid in ("vl-video", "vl-long-video-chunked")]


@pytest.mark.parametrize("lane_id", CHAT_LANES)
def test_chat_lanes_read_sglang_chat_streams(lane_id):
    sample, received, call = _send(lane_id, {"/v1/chat/completions": ("text/event-stream", chat_stream(), {})})
    assert sample.output == TEXT and sample.ttft is not None and sample.latency >= sample.ttft
    assert json.loads(received[0][1]) == call.body  # send transmits exactly what the builder made


@pytest.mark.parametrize("lane_id, stream", [("asr-offline", False), ("asr-http-stream", True)])
def test_asr_lanes_read_sglang_transcriptions(lane_id, stream):
    said = "please call stella"
    ctype = "text/event-stream" if stream else "application/json"
    sample, received, call = _send(lane_id, {"/v1/audio/transcriptions": (ctype, transcription(said, stream), {})})
    assert sample.output == said and (sample.ttft is not None) == stream and sample.audio_seconds > 0
    assert all(f'name="{k}"\r\n\r\n{v}\r\n'.encode() in received[0][1] for k, v in call.body.items())


# upstream's own _send dumps TranscriptionSessionConfig where the SDK type expects its base class
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_websocket_lane_reads_sglang_realtime_events():
    from openai.types import realtime as rt
    from websockets.asyncio.server import serve

    release = target("sglang", "release")
    session = release.modules["realtime"].TranscriptionSessionConfig.model_validate(
        {"type": "transcription", "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000},
                                                      "turn_detection": None}}})
    words, received, ready, port = ["we", " will", " meet"], [], threading.Event(), []

    async def handler(ws):
        await ws.send(rt.SessionCreatedEvent(event_id="e0", type="session.created", session=session).model_dump_json())
        async for raw in ws:
            event = json.loads(raw)
            received.append(event)
            if event["type"] == "session.update":
                await ws.send(rt.SessionUpdatedEvent(event_id="e1", type="session.updated",
                                                     session=session).model_dump_json())
            elif event["type"] == "input_audio_buffer.commit":
                await ws.send(rt.InputAudioBufferCommittedEvent(event_id="e2", type="input_audio_buffer.committed",
                                                                item_id="item_1").model_dump_json())
                for w in words:
                    await ws.send(rt.ConversationItemInputAudioTranscriptionDeltaEvent(
                        event_id="e3", type="conversation.item.input_audio_transcription.delta", item_id="item_1",
                        content_index=0, delta=w).model_dump_json())
                await ws.send(rt.ConversationItemInputAudioTranscriptionCompletedEvent(
                    event_id="e4", type="conversation.item.input_audio_transcription.completed", item_id="item_1",
                    content_index=0, transcript="".join(words),
                    usage={"type": "duration", "seconds": 2.0}).model_dump_json())

    async def main(stop):
        async with serve(handler, "127.0.0.1", 0) as server:
            port.append(server.sockets[0].getsockname()[1])
            ready.set()
            await stop

    loop = asyncio.new_event_loop()
    stop = loop.create_future()
    thread = threading.Thread(target=loop.run_until_complete, args=(main(stop),), daemon=True)
    thread.start()
    ready.wait(5)
    try:
        sample, _, call = _send("asr-websocket-stream", {}, "--ws-url", f"ws://127.0.0.1:{port[0]}/v1/realtime",
                                "--pace", "0")
    finally:
        loop.call_soon_threadsafe(stop.set_result, None)
        thread.join(5)
    assert sample.output == "we will meet" and sample.ttft is not None and sample.extra["deltas"] == 3
    assert received == call.events


def test_processor_lane_reads_engine_generate_chunks():
    api = target("sglang", "release").modules["api_types"]
    words = TEXT.split()
    chunks = [api.GenerateResponse(text=" ".join(words[:i]), meta_info=api.GenerateMetaInfo(
        id="g", prompt_tokens=40, completion_tokens=i)).to_json_value() for i in range(1, len(words) + 1)]

    class Engine:
        def generate(self, **kwargs):
            self.kwargs = kwargs
            return iter(chunks)

    lane, args = new_lane("vl-video-processor")
    with client_tools(), tempfile.TemporaryDirectory() as workdir:
        lane.prepare(args, workdir)
        lane.engine = Engine()
        sample = lane.send(args, "", 0)
        built = lane.calls(args, 0)[0].body
        assert lane.engine.kwargs.keys() == built.keys() and all(lane.engine.kwargs[k] is built[k] for k in built)
    assert sample.output == TEXT and sample.ttft is not None and sample.extra["prompt_tokens"] == 40


def test_omni_speech_reads_sglang_omni_chat_audio():
    import base64

    sys.path.insert(0, str(Path(__file__).parent))
    from standin_server import wav_chunk

    audio = [base64.b64encode(wav_chunk(0.5)).decode() for _ in range(2)]
    said = "Hello from the speech validation lane, one two three."
    sample, received, call = _send("omni-speech", {"/v1/chat/completions": (
        "text/event-stream", omni_chat_stream(said, audio), {})}, "--sentence", said)
    assert sample.output == said and sample.ok and sample.ttfa is not None and sample.audio_seconds == pytest.approx(1.0)
    assert json.loads(received[0][1]) == call.body


def test_omni_speech_reads_sglang_omni_raw_pcm_stream():
    pcm = b"\x00\x01" * 24000  # one second at 24 kHz, as _speech_audio_response streams it
    headers = {"X-Sample-Rate": "24000", "X-Channels": "1", "X-Bit-Depth": "16"}
    sample, received, call = _send("omni-speech", {"/v1/audio/speech": ("audio/pcm", pcm, headers)},
                                   "--endpoint", "speech")
    assert sample.ok and sample.audio_seconds == pytest.approx(1.0) and sample.ttfa is not None
    assert json.loads(received[0][1]) == call.body and call.body["response_format"] == "pcm"

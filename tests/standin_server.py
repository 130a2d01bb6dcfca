"""A stand-in for an SGLang / sglang-omni server on 127.0.0.1, for testing the lanes without a GPU.

It answers from the truth marker the lanes write into their media (PNG tEXt, RIFF INFO),
so a lane's correctness check passes exactly when the media reached the server intact.
Knobs make it slow, fail with a status, answer wrongly, or never become healthy.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import struct
import threading
import time
import urllib.request
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standin_speech import Voice, pcm_stream, said_in

MARK = re.compile(rb"LANE-TRUTH:([^;\x00]{0,20000});")  # long ASR clips carry long references
REPEAT = "Repeat exactly this sentence and nothing else:"
WRONG = "I am not sure, nothing comes to mind"


def truths(data: bytes) -> list[str]:
    return [m.decode() for m in MARK.findall(data)]


def media_bytes(url: str) -> bytes:
    if url.startswith("data:"):
        return base64.b64decode(url.split(",", 1)[1])
    if url.startswith(("http://", "https://")):
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.read()
    with open(url.removeprefix("file://"), "rb") as fh:
        return fh.read()


VIDEO_PAD, IMAGE_PAD, MERGE = 151656, 151655, 2  # Qwen-VL <|video_pad|>, <|image_pad|>, spatial merge
COLOURS = {  # playbook/lanes/_media.py's palette, for reading a colour back out of pixel values
    "red": (220, 30, 30), "green": (30, 160, 60), "blue": (30, 60, 220),
    "yellow": (240, 200, 20), "purple": (130, 40, 160), "orange": (245, 130, 20),
}


def processor_output_truths(req: dict) -> list[str]:
    """Check a /generate body the way SGLang reads a `format: "processor_output"` item; what the pixels show.

    ValueError (a 400) for what upstream would reject or mis-read: no input_ids, not exactly one
    processor_output item, a missing key, a grid that is not [[t, h, w], ...], feature rows that do
    not add up to the grid, or a pad-token count in input_ids that does not match it. The pixel rows
    are read as consecutive RGB triples in [0, 1] (the test's fake processor lays them out so).
    A plain text /generate (no media) is answered from its prompt.
    """
    ids = req.get("input_ids")
    media = [(key, req[key]) for key in ("video_data", "image_data") if req.get(key) is not None]
    if not media and ids is None:
        if isinstance(req.get("text"), str):
            return []
        raise ValueError("either text or input_ids should be provided")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, int) for i in ids):
        raise ValueError("processor_output needs input_ids: a non-empty flat list of token ids")
    if len(media) != 1:
        raise ValueError(f"expected one of video_data or image_data, got {[k for k, _ in media]}")
    key, items = media[0]
    if not isinstance(items, list) or len(items) != 1 or not isinstance(items[0], dict):
        raise ValueError(f"{key}: a processor_output must be the only item of a list")
    item = items[0]
    if item.get("format") != "processor_output":
        raise ValueError(f"{key}[0].format is {item.get('format')!r}, expected 'processor_output'")
    video = key == "video_data"
    feature, grid_key, pad = ("pixel_values_videos", "video_grid_thw", VIDEO_PAD) if video else \
        ("pixel_values", "image_grid_thw", IMAGE_PAD)
    rows, grid = item.get(feature), item.get(grid_key)
    if rows is None or grid is None:
        raise ValueError(f"{key}[0] lacks {[k for k in (feature, grid_key) if item.get(k) is None]}")
    if not (isinstance(grid, list) and grid and all(
            isinstance(g, list) and len(g) == 3 and all(isinstance(x, int) and x > 0 for x in g) for g in grid)):
        raise ValueError(f"{grid_key} must be a nested list [[t, h, w], ...] of positive ints, got {str(grid)[:60]}")
    if not (isinstance(rows, list) and rows and all(isinstance(r, list) and len(r) == len(rows[0]) for r in rows)):
        raise ValueError(f"{feature} must be a 2-D list (patches x features)")
    patches = sum(t * h * w for t, h, w in grid)
    if len(rows) != patches:
        raise ValueError(f"{feature} has {len(rows)} rows but {grid_key} {grid} implies {patches}")
    if any(h % MERGE or w % MERGE for _, h, w in grid):
        raise ValueError(f"{grid_key} {grid}: h and w must be multiples of the merge size {MERGE}")
    tokens = patches // (MERGE * MERGE)
    if ids.count(pad) != tokens:
        raise ValueError(f"input_ids hold {ids.count(pad)} pad tokens {pad}, {grid_key} implies {tokens}")
    return [pixel_colour(rows)]


def pixel_colour(rows: list[list[float]]) -> str:
    """The palette colour nearest the most common non-white RGB triple."""
    counts: dict[tuple, int] = {}
    for row in rows:
        for i in range(0, len(row) - 2, 3):
            rgb = tuple(round(v * 255) for v in row[i:i + 3])
            if min(rgb) < 235:
                counts[rgb] = counts.get(rgb, 0) + 1
    if not counts:
        return "nothing but white"
    rgb = max(counts, key=counts.get)
    return "square " + min(COLOURS, key=lambda c: sum((a - b) ** 2 for a, b in zip(COLOURS[c], rgb)))


def wav_chunk(seconds: float, rate: int = 24000, pcm: bytes | None = None) -> bytes:
    pcm = b"\x00\x01" * int(seconds * rate) if pcm is None else pcm
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm
    return b"RIFF" + struct.pack("<I", len(body)) + body


class StandIn:
    """Run with `with StandIn(...) as s:`; s.url is the HTTP base, s.ws_url the realtime websocket.

    Speech output comes from a standin_speech.Voice (seam_glitch: a click at join 1); audio_delay
    sleeps before each audio chunk.
    """

    def __init__(self, *, delay: float = 0.0, status: int | None = None, wrong: bool = False,
                 healthy: bool = True, transcript: str = "the quick brown fox jumps over the lazy dog",
                 websocket: bool = False, seam_glitch: bool = False, audio_delay: float = 0.0):
        self.delay, self.status, self.wrong, self.healthy = delay, status, wrong, healthy
        self.transcript, self.websocket = transcript, websocket
        self.voice, self.audio_delay = Voice(seam_glitch), audio_delay
        self.requests: list[dict] = []  # what the lanes sent, for assertions

    # -- lifecycle
    def __enter__(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.ws_url = None
        if self.websocket:
            self._start_ws()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.websocket:
            self._loop.call_soon_threadsafe(self._stop.set_result, None)
            self._thread.join(5)

    # -- answers
    def answer(self, prompt: str, found: list[str]) -> str:
        if self.wrong:
            return WRONG
        if REPEAT in prompt:
            return prompt.split(REPEAT, 1)[1].strip()
        return "I see: " + "; ".join(found) if found else "I see nothing in particular."

    def heard(self, audio: bytes) -> str:
        if self.wrong:
            return WRONG
        found = truths(audio)
        return found[0] if found else (self.voice.heard(audio) or self.transcript)

    # -- websocket (OpenAI Realtime transcription subset)
    def _start_ws(self):
        ready = threading.Event()

        async def session(ws):
            await ws.send(json.dumps({"type": "session.created", "session": {"type": "transcription"}}))
            received, sent, heard = 0, 0, bytearray()

            def words():  # what the PCM so far says (fake espeak-ng clips carry their words), else the knob
                return (WRONG if self.wrong else said_in(bytes(heard)) or self.transcript).split()

            async for raw in ws:
                event = json.loads(raw)
                kind = event.get("type")
                if kind == "session.update":
                    await ws.send(json.dumps({"type": "session.updated", "session": event.get("session")}))
                elif kind == "input_audio_buffer.append":
                    heard += base64.b64decode(event.get("audio", ""))
                    received = len(heard)
                    if self.delay:
                        await asyncio.sleep(self.delay / 10)
                    said = words()
                    if received >= 6400 * (sent + 1) and sent < len(said) - 1:  # a word per 200 ms heard
                        await ws.send(json.dumps({"type": "conversation.item.input_audio_transcription.delta",
                                                  "item_id": "item_1", "delta": (" " if sent else "") + said[sent]}))
                        sent += 1
                elif kind == "input_audio_buffer.commit":
                    await ws.send(json.dumps({"type": "input_audio_buffer.committed", "item_id": "item_1"}))
                    said = words()
                    for i in range(sent, len(said)):
                        await ws.send(json.dumps({"type": "conversation.item.input_audio_transcription.delta",
                                                  "item_id": "item_1", "delta": (" " if i else "") + said[i]}))
                    await ws.send(json.dumps({"type": "conversation.item.input_audio_transcription.completed",
                                              "item_id": "item_1", "transcript": " ".join(said)}))

        async def serve():
            from websockets.asyncio.server import serve as ws_serve

            self._stop = asyncio.get_running_loop().create_future()
            async with ws_serve(session, "127.0.0.1", 0) as server:
                port = server.sockets[0].getsockname()[1]
                self.ws_url = f"ws://127.0.0.1:{port}/v1/realtime"
                ready.set()
                await self._stop

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(serve(),), daemon=True)
        self._thread.start()
        ready.wait(5)


def _handler(server: StandIn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _json(self, code: int, obj) -> None:
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _sse(self, events) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in events:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

        def do_GET(self):
            if self.path == "/health":
                return self._json(200 if server.healthy else 503, {"status": "healthy" if server.healthy else "starting"})
            if self.path == "/v1/models":
                return self._json(200, {"object": "list", "data": [{"id": "stand-in", "object": "model"}]})
            self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if server.status:
                return self._json(server.status, {"error": {"message": "stand-in failure", "code": server.status}})
            time.sleep(server.delay)
            route = {"/v1/chat/completions": self._chat, "/v1/audio/transcriptions": self._transcribe,
                     "/v1/audio/speech": self._speech, "/generate": self._generate}.get(self.path)
            if route is None:
                return self._json(404, {"error": {"message": f"no route {self.path}"}})
            route(body)

        def _chat(self, body: bytes):
            req = json.loads(body)
            server.requests.append(req)
            found, prompt = [], []
            for msg in req.get("messages", []):
                content = msg.get("content")
                for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
                    kind = part.get("type")
                    if kind == "text":
                        prompt.append(part["text"])
                    elif kind in ("image_url", "video_url", "audio_url"):
                        found += truths(media_bytes(part[kind]["url"]))
                    elif kind == "input_audio":
                        found += truths(base64.b64decode(part["input_audio"]["data"]))
            for key in ("images", "videos", "audios"):  # sglang-omni's top-level media lists
                for url in req.get(key) or []:
                    found += truths(media_bytes(url))
            text = server.answer(" ".join(prompt), found)
            audio = "audio" in (req.get("modalities") or [])
            if not req.get("stream"):
                message = {"role": "assistant", "content": text}
                if audio:
                    message["audio"] = {"id": "a", "data": base64.b64encode(wav_chunk(1.2)).decode(), "transcript": text}
                return self._json(200, {"id": "c", "object": "chat.completion",
                                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

            speech = server.voice.speak(text, (len(text.split()) + 2) // 3, 0.4) if audio else []

            def events():
                yield {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}
                for i, word in enumerate(text.split()):
                    yield {"choices": [{"index": 0, "delta": {"content": (" " if i else "") + word}}]}
                    if audio and i % 3 == 0:
                        time.sleep(server.audio_delay)
                        yield {"choices": [{"index": 0, "delta": {"audio": {
                            "id": "a", "data": base64.b64encode(wav_chunk(0.4, pcm=speech[i // 3])).decode()}}}]}
                yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}

            self._sse(events())

        def _transcribe(self, body: bytes):
            msg = BytesParser(policy=HTTP).parsebytes(
                f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body)
            fields, audio = {}, b""
            for part in msg.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if part.get_filename():
                    audio = part.get_payload(decode=True)
                else:
                    fields[name] = part.get_content().strip()
            server.requests.append(fields)
            if not audio:
                return self._json(400, {"error": {"message": "no file"}})
            text = server.heard(audio)
            if fields.get("stream") != "true":
                return self._json(200, {"text": text})
            self._sse({"choices": [{"index": 0, "delta": {"content": (" " if i else "") + w}}]}
                      for i, w in enumerate(text.split()))

        def _speech(self, body: bytes):
            req = json.loads(body)
            server.requests.append(req)
            if req.get("stream") and req.get("response_format") == "pcm":
                return pcm_stream(self, [] if server.wrong else server.voice.speak(req.get("input", ""), 3, 0.5),
                                  server.audio_delay)
            chunks = [] if server.wrong else [wav_chunk(0.5) for _ in range(3)]
            self._sse({"object": "audio.speech.chunk", "index": i,
                       "audio": {"data": base64.b64encode(c).decode(), "format": "wav", "sample_rate": 24000}}
                      for i, c in enumerate(chunks))

        def _generate(self, body: bytes):
            req = json.loads(body)
            server.requests.append(req)
            try:
                found = processor_output_truths(req)
            except ValueError as exc:  # the shape of SGLang's 400 body
                return self._json(400, {"object": "error", "message": str(exc), "type": "BadRequestError", "code": 400})
            text = server.answer(req.get("text") or "", found)
            meta = {"id": "g", "prompt_tokens": len(req.get("input_ids") or []),
                    "completion_tokens": len(text.split()), "finish_reason": {"type": "stop"}}
            if not req.get("stream"):
                return self._json(200, {"text": text, "meta_info": meta})
            words = text.split()  # SGLang's default stream: every event carries the whole text so far
            self._sse({"text": " ".join(words[:i]), "meta_info": dict(meta, completion_tokens=i)}
                      for i in range(1, len(words) + 1))

    return Handler


if __name__ == "__main__":  # `python tests/standin_server.py --port N`: a launchable stand-in for --launch tests
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    opts = parser.parse_args()
    stand_in = StandIn()
    httpd = ThreadingHTTPServer(("127.0.0.1", opts.port), _handler(stand_in))
    httpd.serve_forever()

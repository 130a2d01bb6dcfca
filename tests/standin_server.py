"""A stand-in for an SGLang / sglang-omni server on 127.0.0.1, for testing the lanes without a GPU.

It answers from the truth marker the lanes write into their media (PNG tEXt, RIFF INFO),
so a lane's correctness check passes exactly when the media reached the server intact.
Knobs make it slow, fail with a status, answer wrongly, never become healthy, or drop the
audio track of a video (as Qwen3-Omni's processor does when it ignores use_audio_in_video).

Bodies are refused (400) the way upstream refuses them: each is checked with upstream's own
request models (dossier.contracts: the installed sglang 0.5.23 or sglang-omni 0.1.9 release
when there is one, else the pinned facts), leniently, so keys upstream ignores are ignored
here too. serves="sglang-omni" judges chat requests with sglang-omni's models (speech
requests always are).
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
from pathlib import Path
from types import SimpleNamespace

from dossier import contracts

from standin_speech import Voice, pcm_stream, said_in

MARK = re.compile(rb"LANE-TRUTH:([^;\x00]{0,20000});")  # long ASR clips carry long references
HEARD = " | heard: "  # an AVI truth's soundtrack part (playbook/lanes/omni_av.py)
REPEAT = "Repeat exactly this sentence and nothing else:"
WRONG = "I am not sure, nothing comes to mind"


def truths(data: bytes) -> list[str]:
    return [m.decode() for m in MARK.findall(data)]


def without_soundtrack(avi: bytes) -> bytes:
    """An AVI's bytes minus its audio ('01wb') chunks: what a server that drops the track still sees."""
    start = avi.find(b"movi")
    if start < 0:
        return avi
    out, pos = [avi[:start + 4]], start + 4
    while pos + 8 <= len(avi):
        kind, size = avi[pos:pos + 4], struct.unpack("<I", avi[pos + 4:pos + 8])[0]
        end = pos + 8 + size + (size % 2)
        if kind != b"01wb":
            out.append(avi[pos:end])
        if kind == b"idx1":
            break
        pos = end
    return b"".join(out)


def media_bytes(url: str) -> bytes:
    if url.startswith("data:"):
        return base64.b64decode(url.split(",", 1)[1])
    if url.startswith(("http://", "https://")):
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.read()
    with open(url.removeprefix("file://"), "rb") as fh:
        return fh.read()


def upstream_targets(which: str | None) -> dict:
    """Per repo, the upstream versions whose models judge requests: "auto" (the release when
    installed, else the pin), "release", "pinned", or None (accept anything)."""
    if which is None:
        return {}
    root = Path(__file__).resolve().parents[1]
    out = {}
    for repo in contracts.RELEASE_REPOS:
        release = None
        if which in ("auto", "release"):
            try:
                release = contracts.installed_release(root, repo)
            except contracts.ReleaseMissing as exc:
                if which == "release":  # refused when a request for this repo arrives (see refusal)
                    out[repo] = exc
                    continue
        out[repo] = [release] if release else [contracts.load_pinned(root, repo)]
        if repo == "sglang":
            out["release"] = release  # judges the pin's realtime events (contracts._event_model)
    return out


def wav_chunk(seconds: float, rate: int = 24000, pcm: bytes | None = None) -> bytes:
    pcm = b"\x00\x01" * int(seconds * rate) if pcm is None else pcm
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm
    return b"RIFF" + struct.pack("<I", len(body)) + body


class StandIn:
    """Run with `with StandIn(...) as s:`; s.url is the HTTP base, s.ws_url the realtime websocket.

    Speech output comes from a standin_speech.Voice (seam_glitch: a click at join 1; seam_gap: that many
    samples lost at every join, #1355's bug); audio_delay
    sleeps before each audio chunk.
    """

    def __init__(self, *, delay: float = 0.0, status: int | None = None, wrong: bool = False,
                 healthy: bool = True, transcript: str = "the quick brown fox jumps over the lazy dog",
                 websocket: bool = False, seam_glitch: bool = False, audio_delay: float = 0.0,
                 seam_gap: int = 0, audio_in_video: str = "hears", upstream: str | None = "auto", serves: str = "sglang",
                 version: str = "0.5.23.dev7+g1a2b3c4d5e6f"):
        self.delay, self.status, self.wrong, self.healthy = delay, status, wrong, healthy
        self.transcript, self.websocket = transcript, websocket
        self.voice, self.audio_delay = Voice(seam_glitch, seam_gap), audio_delay
        self.hears_video_audio = {"hears": True, "drops": False}[audio_in_video]
        self.targets = upstream_targets(upstream)
        self.serves = {"sglang": "sglang", "sglang-omni": "sglang-omni"}[serves]
        self.requests: list[dict] = []  # what the lanes sent, for assertions
        self.version = version  # what /server_info reports, as sglang's setuptools-scm version does

    def refusal(self, kind: str, path: str, body: dict, files: dict | None = None, events=None) -> str | None:
        """Upstream's reason to refuse this request (first problem), or None when it would accept it."""
        call = SimpleNamespace(kind=kind, method="WS" if events else "POST", path=path, body=body,
                               files=files or {}, events=events or [])
        repo = "sglang-omni" if kind == "speech" or (kind == "chat" and self.serves == "sglang-omni") else "sglang"
        targets = self.targets.get(repo, [])
        if isinstance(targets, Exception):
            return f"stand-in: upstream={repo} release is not installed: {targets}"
        for target in targets:
            problems = contracts.check_call(target, call, strict=False, release=self.targets.get("release"))
            if problems:
                return problems[0]
        return None

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
                reason = self.refusal("realtime", "/v1/realtime", {}, events=[event])
                if reason:  # upstream answers a bad client event with an error event
                    await ws.send(json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                                        "message": reason}}))
                    continue
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
            if self.path == "/server_info":  # sglang's: ServerArgs fields plus `version`
                return self._json(200, {"model_path": "stand-in", "tp_size": 1, "version": server.version})
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

        def _refuse(self, reason: str | None) -> bool:
            """Answer 400 in sglang's error shape when upstream would refuse the request."""
            if reason is None:
                return False
            self._json(400, {"object": "error", "message": reason, "type": "BadRequestError", "code": 400})
            return True

        def _chat(self, body: bytes):
            req = json.loads(body)
            server.requests.append(req)
            if self._refuse(server.refusal("chat", self.path, req)):
                return
            found, prompt = [], []
            for msg in req.get("messages", []):
                content = msg.get("content")
                for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
                    kind = part.get("type")
                    if kind == "text":
                        prompt.append(part["text"])
                    elif kind == "video_url":
                        video = media_bytes(part[kind]["url"])
                        hears = req.get("use_audio_in_video") and server.hears_video_audio
                        for truth in truths(video if hears else without_soundtrack(video)):
                            seen, _, heard = truth.partition(HEARD)
                            found += [seen] + ([heard] if heard and hears else [])
                    elif kind in ("image_url", "audio_url"):
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
            fields, files = {}, {}
            for part in msg.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if part.get_filename():
                    files[name] = (part.get_filename(), part.get_payload(decode=True), part.get_content_type())
                else:
                    fields[name] = part.get_content().strip()
            server.requests.append(fields)
            if self._refuse(server.refusal("transcription", self.path, fields, files)):
                return
            text = server.heard(files["file"][1])
            if fields.get("stream") != "true":
                return self._json(200, {"text": text})
            self._sse({"choices": [{"index": 0, "delta": {"content": (" " if i else "") + w}}]}
                      for i, w in enumerate(text.split()))

        def _speech(self, body: bytes):
            """sglang-omni streams speech as raw 16-bit PCM (rate in X-Sample-Rate), not as events."""
            req = json.loads(body)
            server.requests.append(req)
            if self._refuse(server.refusal("speech", self.path, req)):
                return
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
            if self._refuse(server.refusal("generate", self.path, req)):
                return
            text = server.answer(req.get("text") or "", [])
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

"""Requests to the server under test: HTTP with one-line errors, SSE streams, multipart uploads, chat.

urllib and http.client are imported by `http`, which sends: the lanes import this module for
`chat_call` too, and building requests (a --dry-run) needs neither.
"""

from __future__ import annotations

import json
import os
import time

from _lane import Call, LaneError


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[-1].split("/", 1)[-1]


def _error_text(exc) -> str:
    """One line for a urllib.error.HTTPError: its status and the start of its body."""
    try:
        body = exc.read().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - best effort detail
        body = ""
    body = " ".join(body.split())[:200]
    return f"HTTP {exc.code}" + (f": {body}" if body else "")


def http(method: str, url: str, body: bytes | None = None, headers: dict | None = None, timeout: float = 600):
    """Open a request; HTTP and connection errors become LaneError naming the endpoint."""
    import urllib.error
    import urllib.request
    from http.client import HTTPException

    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        return urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise LaneError(f"server returned {_error_text(exc)} for {method} {_path(url)}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise LaneError(f"cannot reach {url}: {reason}") from None
    except HTTPException as exc:  # bytes that are not HTTP
        raise LaneError(f"{url} did not answer in HTTP ({type(exc).__name__}) for {method} {_path(url)}") from None


def post_json(url: str, payload: dict, timeout: float = 600) -> dict:
    with http("POST", url, json.dumps(payload).encode(), {"Content-Type": "application/json"}, timeout) as resp:
        try:
            return json.loads(resp.read())
        except json.JSONDecodeError:
            raise LaneError(f"non-JSON reply from POST {_path(url)}") from None


def sse_events(resp):
    """Yield (arrival time, parsed JSON object) for each `data:` event until [DONE].

    A stream with no `data:` event at all, or an event that is not a JSON object, is not an
    answer: it raises LaneError rather than becoming an empty, "measured" sample.
    """
    seen = False
    for raw in resp:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        seen = True
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            raise LaneError(f"malformed SSE event: {data[:80]}") from None
        if not isinstance(event, dict):
            raise LaneError(f"SSE event is not a JSON object: {data[:80]}")
        if isinstance(event, dict) and event.get("error"):
            err = event["error"]
            raise LaneError(f"server streamed an error: {err.get('message', err) if isinstance(err, dict) else err}")
        yield time.perf_counter(), event
    if not seen:
        raise LaneError("the reply is not an event stream (no `data:` lines)")


def multipart(fields: dict, files: dict) -> tuple[bytes, str]:
    """(body, content type) for a multipart/form-data upload; files: name -> (filename, bytes, mime)."""
    boundary = "lane" + os.urandom(8).hex()
    out = []
    for name, value in fields.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, data, mime) in files.items():
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                   f"Content-Type: {mime}\r\n\r\n".encode() + data + b"\r\n")
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out), f"multipart/form-data; boundary={boundary}"


TRANSCRIPTIONS = "/v1/audio/transcriptions"


def transcribe(base: str, model: str, audio: bytes, timeout: float, filename: str = "audio.wav",
               mime: str = "audio/wav", **fields):
    """POST audio to an OpenAI-style transcription endpoint (multipart); the open response.

    `base` is a server URL, or the endpoint's full URL.
    """
    url = base.rstrip("/")
    url = url if url.endswith(TRANSCRIPTIONS) else url + TRANSCRIPTIONS
    body, ctype = multipart({"model": model, "response_format": "json", **fields}, {"file": (filename, audio, mime)})
    return http("POST", url, body, {"Content-Type": ctype}, timeout)


def chat_stream(base: str, payload: dict, timeout: float) -> dict:
    """Stream a chat completion: text, time to first text token, audio chunks with arrival times."""
    start = time.perf_counter()
    body = json.dumps(dict(payload, stream=True)).encode()
    text, ttft, audio, ttfa, audio_at = [], None, [], None, []
    with http("POST", base + "/v1/chat/completions", body, {"Content-Type": "application/json"}, timeout) as resp:
        for at, event in sse_events(resp):
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    ttft = ttft if ttft is not None else at - start
                    text.append(delta["content"])
                if isinstance(delta.get("audio"), dict) and delta["audio"].get("data"):
                    ttfa = ttfa if ttfa is not None else at - start
                    audio.append(delta["audio"]["data"])
                    audio_at.append(at - start)
    return {"text": "".join(text), "ttft": ttft, "ttfa": ttfa, "audio_b64": audio, "audio_at": audio_at,
            "latency": time.perf_counter() - start}


def chat_call(model: str, content, args, **extra) -> Call:
    """One greedy, streamed user turn (str or content parts); --max-tokens from args."""
    return Call("chat", path="/v1/chat/completions", body={
        "model": model, "messages": [{"role": "user", "content": content}],
        "max_tokens": args.max_tokens, "temperature": 0, "stream": True, **extra})


def ask(base: str, model: str, content, args, **extra) -> dict:
    """One greedy user turn (str or content parts) streamed via chat_stream; --max-tokens and --timeout from args."""
    return chat_stream(base, chat_call(model, content, args, **extra).body, args.timeout)

"""The stand-in server refuses what upstream refuses (with upstream's own models), and only that."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from standin_server import StandIn  # noqa: E402
from test_lane_contracts import target  # noqa: E402


def _post(url: str, payload: dict) -> tuple[int, dict | bytes, str]:
    req = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
            kind = resp.headers.get("Content-Type", "")
            return resp.status, json.loads(body) if "json" in kind else body, kind
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), ""


CHAT = {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "max_tokens": 4}


@pytest.mark.parametrize("upstream", ["pinned", "release"])
def test_chat_of_the_wrong_type_is_a_400_naming_the_model(upstream):
    target("sglang", upstream)  # skips without the release wheel (unless CI requires it)
    bad = json.loads(json.dumps(CHAT))
    bad["messages"][0]["content"].append({"type": "image_url", "image_url": {"url": 7}})
    with StandIn(upstream=upstream) as server:
        code, body, _ = _post(server.url + "/v1/chat/completions", bad)
        assert code == 400 and "ChatCompletionRequest" in body["message"] and "image_url.url" in body["message"]
        assert _post(server.url + "/v1/chat/completions", dict(CHAT, bogus=1))[0] == 200  # upstream ignores it


def test_generate_gate_of_the_release_refuses_processor_output_the_pin_took():
    target("sglang", "release")
    body = {"input_ids": [1, 2], "sampling_params": {"max_new_tokens": 4},
            "video_data": [{"format": "processor_output", "pixel_values_videos": [[0.5]], "video_grid_thw": [[1, 2, 2]]}]}
    with StandIn(upstream="release") as server:
        code, reply, _ = _post(server.url + "/generate", body)
        assert code == 400 and "GenerateRequest" in reply["message"] and "unknown field `format`" in reply["message"]
        assert _post(server.url + "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 2}})[0] == 200
    with StandIn(upstream="pinned") as server:
        assert _post(server.url + "/generate", body)[0] == 200


def test_transcription_form_refusals():
    with StandIn(upstream="pinned") as server:
        for fields, reason in [({"response_format": "srt"}, "refused"), ({"stream": "maybe"}, "not a boolean")]:
            body, ctype = _multipart({"model": "q", **fields}, b"RIFF")
            req = urllib.request.Request(server.url + "/v1/audio/transcriptions", body, {"Content-Type": ctype})
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(req, timeout=10)
            message = json.loads(exc.value.read())["message"]
            assert exc.value.code == 400 and "openai_v1_audio_transcriptions form" in message and reason in message


def test_speech_stream_is_raw_pcm_and_needs_format_pcm():
    with StandIn() as server:
        code, body, _ = _post(server.url + "/v1/audio/speech", {"input": "hi", "response_format": "wav", "stream": True})
        assert code == 400 and "CreateSpeechRequest" in body["message"] and "must be 'pcm'" in body["message"]
        code, body, kind = _post(server.url + "/v1/audio/speech", {"input": "hi", "response_format": "pcm", "stream": True})
        assert code == 200 and kind == "audio/pcm" and len(body) == 3 * 24000


def test_bad_realtime_event_gets_an_error_event():
    from websockets.sync.client import connect

    with StandIn(websocket=True, upstream="pinned") as server, connect(server.ws_url) as ws:
        assert json.loads(ws.recv(timeout=5))["type"] == "session.created"
        ws.send(json.dumps({"type": "input_audio_buffer.flush"}))
        event = json.loads(ws.recv(timeout=5))
        assert event["type"] == "error" and "'input_audio_buffer.flush' is not handled" in event["error"]["message"]


def _multipart(fields: dict, audio: bytes) -> tuple[bytes, str]:
    out = [f'--b\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()]
    out.append(b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n'
               b"Content-Type: audio/wav\r\n\r\n" + audio + b"\r\n--b--\r\n")
    return b"".join(out), "multipart/form-data; boundary=b"

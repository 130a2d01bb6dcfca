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


OMNI_CHAT = {"model": "qwen3-omni", "messages": [{"role": "user", "content": "Say hi"}], "modalities": ["text", "audio"],
             "audio": {"format": "wav"}, "stream": True}


@pytest.mark.parametrize("upstream", ["pinned", "release"])
def test_sglang_omni_chat_and_speech_refusals_follow_its_models(upstream):
    """As sglang-omni (the pin's facts, or 0.1.9's own pydantic models) refuses them; what it ignores passes."""
    label = "sglang-omni 0.1.9" if upstream == "release" else "sglang-omni pinned"
    target("sglang-omni", upstream)  # skips without the release wheel (unless CI requires it)
    with StandIn(upstream=upstream, serves="sglang-omni") as server:
        url = server.url
        assert _post(url + "/v1/chat/completions", OMNI_CHAT)[0] == 200
        assert _post(url + "/v1/chat/completions", dict(OMNI_CHAT, voice_id="x"))[0] == 200  # ignored upstream
        for bad, words in [(dict(OMNI_CHAT, modalities="audio"), "modalities"),
                           ({k: v for k, v in OMNI_CHAT.items() if k != "messages"}, "messages")]:
            code, body, _ = _post(url + "/v1/chat/completions", bad)
            assert code == 400 and f"{label}" in body["message"] and "ChatCompletionRequest" in body["message"]
            assert words in body["message"]
        for bad, words in [({"input": "hi", "response_format": "ogg"}, "'ogg' is refused"),
                           ({"input": "hi", "speed": "fast"}, "speed"), ({"voice": "x"}, "input")]:
            code, body, _ = _post(url + "/v1/audio/speech", bad)
            assert code == 400 and label in body["message"] and "CreateSpeechRequest" in body["message"]
            assert words in body["message"]
        sse = {"input": "hi", "response_format": "wav", "stream_format": "sse"}  # a stream in 0.1.9 only
        code, body, _ = _post(url + "/v1/audio/speech", sse)
        if upstream == "release":
            assert code == 400 and "when {'stream_format': 'sse'}" in body["message"]
        else:
            assert code == 200  # the pin has no stream_format: it ignores the key and answers in full


def test_the_stand_in_judges_chat_as_the_server_it_serves():
    target("sglang-omni", "release")
    bad = dict(OMNI_CHAT, messages=[{"role": "user", "content": [{"type": "texty", "text": "hi"}]}])
    with StandIn(upstream="release") as sglang, StandIn(upstream="release", serves="sglang-omni") as omni:
        assert _post(sglang.url + "/v1/chat/completions", bad)[0] == 400  # sglang types the content parts
        assert _post(omni.url + "/v1/chat/completions", bad)[0] == 200  # sglang-omni's content is `object`

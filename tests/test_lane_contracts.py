"""Every lane's requests and launch against upstream: the pinned commits and the releases.

Requests come from the lanes' own builders (Lane.calls, server_command, engine_kwargs) and
are checked with upstream's request models (the sglang 0.5.23 and sglang-omni 0.1.9 wheels'
pydantic/msgspec classes, or the pinned facts in references/trees/*.contract.json). Strict: a key upstream would silently
ignore fails too, since the lane then measures something other than it says. A failure names
the lane, the upstream version and the model.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from lane_harness import BY_ID, LAUNCH_VARIANTS, built_calls, launch, new_lane  # noqa: E402

from dossier import contracts  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]



@lru_cache(maxsize=None)
def target(repo: str, which: str) -> contracts.Target:
    if which == "pinned":
        return contracts.load_pinned(ROOT, repo)
    try:
        return contracts.installed_release(ROOT, repo)
    except contracts.ReleaseMissing as exc:
        if os.environ.get("DOSSIER_REQUIRE_UPSTREAM"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def pin(repo: str) -> str:
    """The pinned commit as failure messages abbreviate it."""
    return target(repo, "pinned").version[:12]


def optional_release(repo: str = "sglang") -> contracts.Target | None:
    """The release when installed; the pinned checks use it where it helps but do not need it."""
    try:
        return contracts.installed_release(ROOT, repo)
    except contracts.ReleaseMissing:
        return None


def others(repo: str, which: str) -> list:
    """The other version of the same repository, for 'appeared / vanished' in flag messages."""
    other = optional_release(repo) if which == "pinned" else target(repo, "pinned")
    return [other] if other else []


def version_args(lane_id: str, tgt: contracts.Target) -> list[str]:
    """The version flag of lanes that spell flags per version: --sglang-version (the release's, or
    current for the pin) and --omni-version (the release's, or the pinned commit's own version)."""
    lane, _ = new_lane(lane_id)
    options = sys.modules["_runner"].build_parser(lane)._option_string_actions
    if "--sglang-version" in options and not tgt.pinned:
        return ["--sglang-version", tgt.version]
    if "--omni-version" in options:
        return ["--omni-version", tgt.facts["version"] if tgt.pinned else tgt.version]
    return []


@lru_cache(maxsize=None)
def calls_of(lane_id: str, extra: tuple = ()) -> list:
    return built_calls(lane_id, *extra)


def contract_problems(lane_id: str, which: str, calls: list | None = None) -> list[str]:
    """Every way the lane's requests and launches break `which` version of its upstream, one line each."""
    lane = BY_ID[lane_id]
    tgt = target(lane["repo"], which)
    # the pin's realtime events are judged with the release's models when its realtime/protocol.py is the same file
    release = (optional_release() if which == "pinned" else tgt) if lane["repo"] == "sglang" else None
    vargs = version_args(lane_id, tgt)
    out = []
    for call in calls if calls is not None else calls_of(lane_id, tuple(vargs)):
        out += contracts.check_call(tgt, call, strict=True, release=release)
    for variant in [[]] + LAUNCH_VARIANTS.get(lane_id, []):
        argv, env, engine = launch(lane_id, *variant, *vargs)
        if engine is not None:
            out += contracts.check_engine_init(tgt, engine)
        else:
            out += contracts.check_launch(tgt, argv, env, others(lane["repo"], which))
    return [f"lane {lane_id}: {line}" for line in dict.fromkeys(out)]


def assert_contract(lane_id: str, which: str, calls: list | None = None) -> None:
    problems = contract_problems(lane_id, which, calls)
    assert not problems, "\n".join(problems)


CASES = [(lid, which) for lid in BY_ID for which in ("pinned", "release")]


@pytest.mark.parametrize("lane_id, which", CASES, ids=[f"{lid}-{w}" for lid, w in CASES])
def test_lane_meets_upstream_contract(lane_id, which):
    assert_contract(lane_id, which)


def test_every_lane_is_checked_and_sends_something():
    assert {lid for lid, _ in CASES} == set(BY_ID) and len(BY_ID) == 12
    kinds = {call.kind for lid in BY_ID for call in calls_of(lid)}
    assert kinds == {"chat", "transcription", "realtime", "engine"}
    assert {c.kind for c in built_calls("omni-speech", "--endpoint", "speech")} == {"speech"}


@pytest.mark.parametrize("repo", contracts.RELEASE_REPOS)
def test_release_under_test_is_the_pinned_wheel(repo):
    release = target(repo, "release")
    assert release.version == contracts.release_version(ROOT, repo)
    listing = __import__("json").loads((ROOT / f"references/trees/{repo}-release.json").read_text())
    assert listing["version"] == release.version  # the playbook's release notes speak of the same wheel


# ------------------------------------------------------------------ a mistake must fail, naming lane and model


def _mutated(lane_id: str, change) -> list:
    calls = [__import__("copy").deepcopy(c) for c in calls_of(lane_id)]
    change(calls[0].body)
    return calls


@pytest.mark.parametrize("which", ["pinned", "release"])
@pytest.mark.parametrize("lane_id, change, model, words", [
    ("vl-single-image", lambda b: b["messages"][0]["content"][0]["image_url"].update(url=7),
     "ChatCompletionRequest", "image_url.url"),
    ("vl-single-image", lambda b: b["messages"][0]["content"][0]["image_url"].update(detial="high"),
     "ChatCompletionMessageContentImageURL", "unknown key"),
    ("vl-video", lambda b: b.update(max_tokens="many"), "ChatCompletionRequest", "max_tokens"),
    ("omni-audio-video", lambda b: b.update(use_audio_in_vidoe=True), "ChatCompletionRequest", "use_audio_in_vidoe"),
    ("asr-offline", lambda b: b.update(stream="sometimes"), "openai_v1_audio_transcriptions form", "not a boolean"),
    ("asr-http-stream", lambda b: b.update(response_format="srt"), "openai_v1_audio_transcriptions form", "refused"),
    ("asr-offline", lambda b: b.update(prompt="names"), "openai_v1_audio_transcriptions form", "unknown form field"),
    ("vl-video-processor", lambda b: b.update(video_datas=b.pop("video_data")), "Engine.generate", "video_datas"),
])
def test_wrong_type_or_unknown_key_fails_naming_lane_and_model(lane_id, change, model, words, which):
    with pytest.raises(AssertionError) as exc:
        assert_contract(lane_id, which, _mutated(lane_id, change))
    message = str(exc.value)
    assert f"lane {lane_id}: " in message and model in message and words in message
    assert (f"pinned {pin('sglang')}" if which == "pinned" else "sglang 0.5.23") in message


def test_websocket_event_mistakes_fail_naming_the_event_model():
    calls = _mutated("asr-websocket-stream", lambda b: None)
    calls[0].events[0]["session"]["audio"]["input"]["format"]["rate"] = "16k"
    calls[0].events[-1]["type"] = "input_audio_buffer.done"
    message = "\n".join(contract_problems("asr-websocket-stream", "release", calls))
    assert "lane asr-websocket-stream: " in message and "SessionUpdateEvent" in message and "rate" in message
    assert "'input_audio_buffer.done' is not handled" in message and "_CLIENT_EVENT_TYPES" in message


@pytest.mark.parametrize("which", ["pinned", "release"])
def test_sglang_omni_request_mistakes_fail_naming_lane_version_and_model(which):
    label = f"sglang-omni pinned {pin('sglang-omni')}" if which == "pinned" else "sglang-omni 0.1.9"
    calls = _mutated("omni-speech", lambda b: b.update(modalities="audio"))
    message = "\n".join(contract_problems("omni-speech", which, calls))
    assert f"lane omni-speech: POST /v1/chat/completions -> {label} ChatCompletionRequest" in message
    assert "modalities: " in message and ("valid list" if which == "release" else "expected list[str] | None") in message
    calls = _mutated("omni-speech", lambda b: b.update(voice_id="x"))  # ignored upstream: strict fails it
    message = "\n".join(contract_problems("omni-speech", which, calls))
    assert f"{label} ChatCompletionRequest" in message and "voice_id: unknown key of ChatCompletionRequest" in message
    speech = [__import__("copy").deepcopy(c) for c in built_calls("omni-speech", "--endpoint", "speech")]
    assert contract_problems("omni-speech", which, speech) == []
    speech[0].body["response_format"] = "wav"  # what the lane sent before: sglang-omni streams raw PCM only
    message = "\n".join(contract_problems("omni-speech", which, speech))
    assert f"{label} CreateSpeechRequest" in message and "must be 'pcm' when {'stream': True}" in message
    speech[0].body.update(response_format="ogg", stream=False, speed="fast")
    message = "\n".join(contract_problems("omni-speech", which, speech))
    assert "response_format: 'ogg' is refused (allowed: ['aac', 'flac', 'mp3', 'opus', 'pcm', 'wav'])" in message
    assert "speed: " in message


def test_sse_speech_stream_needs_pcm_in_the_release_only():
    """0.1.9 added stream_format; its speech service treats stream_format="sse" as a stream too."""
    speech = [__import__("copy").deepcopy(c) for c in built_calls("omni-speech", "--endpoint", "speech")]
    speech[0].body.update(stream=False, stream_format="sse", response_format="wav")
    message = "\n".join(contract_problems("omni-speech", "release", speech))
    assert "sglang-omni 0.1.9 CreateSpeechRequest" in message and "when {'stream_format': 'sse'}" in message
    message = "\n".join(contract_problems("omni-speech", "pinned", speech))
    assert "stream_format: unknown key of CreateSpeechRequest" in message  # the pin has no such field


@pytest.fixture
def patched_command(monkeypatch):
    def patch(lane_id, edit):
        module = __import__("lane_harness").lane_module(lane_id)
        cls = next(v for v in vars(module).values() if isinstance(v, type) and hasattr(v, "server_command")
                   and v.__module__ == module.__name__)
        original = cls.server_command
        monkeypatch.setattr(cls, "server_command", lambda self, args: edit(original(self, args)))
    return patch


def test_removed_flag_fails_saying_where_it_vanished(patched_command):
    patched_command("vl-long-video-chunked", lambda cmd: cmd + ["--keep-mm-feature-on-device"])
    assert contract_problems("vl-long-video-chunked", "pinned") == []  # deprecated there, still accepted
    message = "\n".join(contract_problems("vl-long-video-chunked", "release"))
    assert ("lane vl-long-video-chunked: launch flag --keep-mm-feature-on-device unrecognized in sglang 0.5.23 "
            "ServerArgs") in message
    assert f"sglang pinned {pin('sglang')} has it, so it vanished between the pin and 0.5.23" in message


@pytest.mark.parametrize("which", ["pinned", "release"])
def test_misspelt_flag_or_bad_choice_fails(patched_command, which):
    patched_command("vl-encoder-dp", lambda cmd: cmd + ["--chunked-prefil-size", "2048",
                                                       "--mm-feature-transport", "gpu"])
    message = "\n".join(contract_problems("vl-encoder-dp", which))
    assert "lane vl-encoder-dp: launch flag --chunked-prefil-size unrecognized in" in message and "ServerArgs" in message
    assert "--mm-feature-transport value 'gpu' is not one of ['cpu', 'cuda_ipc', 'cuda_vmm']" in message


@pytest.mark.parametrize("which, extra, words", [
    ("pinned", ["--talker-gpuu", "1"], "launch flag --talker-gpuu unrecognized in {label} `sgl-omni serve` "
                                       "(sglang_omni/cli/serve.py)"),
    ("pinned", ["--talker-gp", "1"], "launch flag --talker-gp unrecognized"),  # typer takes no abbreviations
    ("pinned", ["--log-level", "loud"], "--log-level value 'loud' is not one of ['debug', 'info', 'warning'"),
    ("pinned", ["--thinker.tp_size", "2"], "launch flag --thinker.tp_size unrecognized in {label}"),
    ("release", ["--talker_ar.gpuu", "1"], "launch flag --talker_ar.gpuu is not a stage override the pipeline config "
                                           "takes: 'gpuu' is not a field of EngineStageConfig"),
    ("release", ["--talkr_ar.gpu", "1"], "--talkr_ar.gpu is not a stage override the pipeline config takes: does not "
                                         "start from a stage name"),
    ("release", ["--thinker.gpu", "0,1"], "--thinker.gpu is not a stage override the pipeline config takes: "
                                          "value '0,1': expected int | list[int] | None"),
    ("release", ["--code2wav.engine.mem_fraction_static", "0.1"], "engine.* exists only on engine stages "
                                                                  "(EngineStageConfig); code2wav is a StageConfig"),
    ("release", ["--talker-gpu", "1"], "launch flag --talker-gpu unrecognized in {label} `sgl-omni serve` "
                                       "(sglang_omni/cli/serve.py); sglang-omni pinned {pin} has it, so it vanished "
                                       "between the pin and 0.1.9"),
])
def test_sglang_omni_launch_mistake_fails_naming_lane_and_version(patched_command, which, extra, words):
    patched_command("omni-speech", lambda cmd: cmd + extra)
    label = f"sglang-omni pinned {pin('sglang-omni')}" if which == "pinned" else "sglang-omni 0.1.9"
    message = "\n".join(contract_problems("omni-speech", which))
    assert "lane omni-speech: " in message and words.format(label=label, pin=pin("sglang-omni")) in message


@pytest.mark.parametrize("gpus", ["1", "2", "3"])
@pytest.mark.parametrize("which", ["pinned", "release"])
def test_every_omni_placement_meets_its_version(gpus, which):
    tgt = target("sglang-omni", which)
    argv, env, _ = launch("omni-speech", "--gpus", gpus, *version_args("omni-speech", tgt))
    assert argv[:2] == ["sgl-omni", "serve"]
    assert contracts.check_launch(tgt, argv, env) == []
    other = target("sglang-omni", "release" if which == "pinned" else "pinned")
    if gpus != "1":  # one GPU is --config --colocate in both; the others are spelt per version
        assert contracts.check_launch(other, argv, env)


@pytest.mark.parametrize("version, dotted", [(None, False), ("0.1.3", False), ("0.1.4", True), ("v0.1.9", True),
                                             ("0.1.10rc1", True), ("0.1.3.post1", False)])
def test_placement_spelling_follows_the_omni_version(version, dotted):
    module = __import__("lane_harness").lane_module("omni-speech")
    flags = module.placement_flags(2, version)
    assert ("--thinker.tp_size" in flags) is dotted and ("--thinker-tp-size" in flags) is not dotted
    assert (flags[flags.index("--code2wav.gpu" if dotted else "--code2wav-gpu") + 1]) == "0"  # #1235


def test_omni_version_defaults_to_the_checkout_then_the_pin(tmp_path):
    (tmp_path / "sglang_omni").mkdir()
    (tmp_path / "sglang_omni" / "__init__.py").write_text('__version__ = "0.1.9"\n')
    lane, args = new_lane("omni-speech", "--omni-root", str(tmp_path))
    assert lane.omni_version(args) == ("0.1.9", "the --omni-root checkout")
    lane, args = new_lane("omni-speech", "--omni-root", str(tmp_path / "missing"))
    assert lane.omni_version(args)[0] == target("sglang-omni", "pinned").facts["version"] == "0.1.3"


def test_engine_keyword_mistake_fails(monkeypatch):
    cls = type(new_lane("vl-video-processor")[0])
    monkeypatch.setattr(cls, "engine_kwargs", lambda self, args: {"model_path": args.model, "tensor_parallel": 2})
    message = "\n".join(contract_problems("vl-video-processor", "release"))
    assert "lane vl-video-processor: sglang.Engine(tensor_parallel=...) -> sglang 0.5.23 ServerArgs" in message


# ----------------------------------------------------------------- feature placement follows the version


@pytest.mark.parametrize("version, transport, flags", [
    (None, None, []), ("0.5.23", None, []), ("0.5.23", "cuda_ipc", ["--mm-feature-transport", "cuda_ipc"]),
    ("0.5.16", "cuda_vmm", ["--mm-feature-transport", "cuda_vmm"]), ("0.5.15", "cuda_ipc", ["--keep-mm-feature-on-device"]),
    ("0.5.9", "cpu", []), ("v0.5.18rc1", "cpu", ["--mm-feature-transport", "cpu"]),
])
def test_feature_placement_flags_follow_the_sglang_version(version, transport, flags):
    module = __import__("lane_harness").lane_module("vl-long-video-chunked")
    assert module.transport_flags(transport, version) == flags


def test_old_spelling_is_valid_only_where_it_exists():
    argv, _, _ = launch("vl-long-video-chunked", "--sglang-version", "0.5.15", "--feature-transport", "cuda_ipc")
    assert argv[-1] == "--keep-mm-feature-on-device"
    assert contracts.check_launch(target("sglang", "pinned"), argv, {}) == []
    assert contracts.check_launch(target("sglang", "release"), argv, {}, [target("sglang", "pinned")])
    with pytest.raises(SystemExit, match="cuda_vmm needs sglang >= 0.5.16"):
        launch("vl-long-video-chunked", "--sglang-version", "0.5.15", "--feature-transport", "cuda_vmm")


def test_the_old_http_processor_body_is_refused_by_the_release_gate():
    """What vl-video-processor used to POST: 0.5.23's /generate gate refuses it as the issue says."""
    (call,) = [c for c in calls_of("vl-video-processor")][:1]
    body = {"input_ids": call.body["input_ids"], "stream": True, "sampling_params": call.body["sampling_params"],
            "video_data": [{k: (v.tolist() if hasattr(v, "tolist") else v)
                            for k, v in call.body["video_data"][0].items()}]}
    http = type(call)("generate", path="/generate", body=body)
    message = "\n".join(contracts.check_call(target("sglang", "release"), http))
    assert "GenerateRequest" in message and "unknown field" in message
    assert contracts.check_call(target("sglang", "pinned"), http, strict=False) == []

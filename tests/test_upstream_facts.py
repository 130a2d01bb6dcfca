"""Upstream contract facts read by AST (dossier.upstream_facts / upstream_args / upstream_types / contracts)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from dossier import contracts, upstream_args
from dossier.config import load_config
from dossier.trees import contract_path, list_tree
from dossier.upstream_types import Schema

PROTOCOL = '''
from pydantic import BaseModel, ConfigDict, Field, AliasChoices

Role = Literal["user", "system"]

class Base(BaseModel):
    rid: Optional[str] = None

class Part(BaseModel):
    type: Literal["text"]
    text: str

class UrlPart(BaseModel):
    type: Literal["image_url"]
    image_url: "Url"

class Url(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str
    detail: Optional[Literal["auto", "low"]] = "auto"

Content = Union[Part, UrlPart]

class ChatCompletionRequest(Base):
    _private: int = 0
    messages: List[Dict[str, Union[str, List[Content]]]]
    model: str = Field(default="default")
    max_tokens: int | None = None
    voice: str = Field(default="a", validation_alias=AliasChoices("voice", "speaker"))
    must: int = Field(...)

class Unused(BaseModel):
    x: int
'''
HTTP_SERVER = '''
@app.post("/v1/audio/transcriptions")
async def handler(raw: Request, file: UploadFile = File(...), model: str = Form(default="default"),
                  stream: bool = Form(default=False), grains: Optional[List[str]] = Form(default=None, alias="g[]")):
    if model not in ["a", "b"]:
        return 400
'''
SERVER_ARGS = '''
class ServerArgs:
    tp_size: A[int, Arg(help="tp", aliases=["--tensor-parallel-size"])] = 1
    tokenizer_path: A[str, "tokenizer"] = ""
    trust_remote_code: A[bool, "trust"] = False
    mm_feature_transport: A[Optional[Literal["cpu", "cuda_ipc"]], "where", NS("mm")] = None
    enable_x: A[Optional[bool], Arg(help="x", action=argparse.BooleanOptionalAction)] = None
    hidden: A[int, Arg(help="h", no_cli=True)] = 0
    plain: int = 0
    def add_cli_args(parser):
        parser.add_argument("--config", type=str)
        parser.add_argument("--level", choices=["a", "b"], nargs="?")
'''


def _upstream(upstream) -> str:
    upstream.write("python/sglang/srt/entrypoints/openai/protocol.py", PROTOCOL)
    upstream.write("python/sglang/srt/entrypoints/http_server.py", HTTP_SERVER)
    upstream.write("python/sglang/srt/server_args.py", SERVER_ARGS)
    upstream.write("python/sglang/srt/entrypoints/openai/realtime/session.py",
                   '_CLIENT_EVENT_TYPES: Dict[str, type] = {"session.update": SessionUpdateEvent}\n')
    upstream.write("python/sglang/srt/entrypoints/engine.py",
                   "class Engine:\n    def generate(self, prompt: Optional[str] = None, *, stream: bool = False):\n"
                   "        pass\n")
    return upstream.commit("init (#1)")


def test_dossier_tree_stores_the_request_contract(kb, upstream):
    sha = _upstream(upstream)
    list_tree(load_config(kb), "sglang", str(upstream.path))
    doc = json.loads(contract_path(kb, "sglang").read_text())
    assert doc["commit"] == sha
    protocol = doc["models"]["python/sglang/srt/entrypoints/openai/protocol.py"]
    assert set(protocol["classes"]) == {"ChatCompletionRequest", "Base", "Part", "UrlPart", "Url"}  # reachable only
    req = protocol["classes"]["ChatCompletionRequest"]["fields"]
    assert "_private" not in req and req["must"]["required"] and not req["model"]["required"]
    assert req["voice"]["aliases"] == ["voice", "speaker"] and protocol["aliases"]["Content"] == "Union[Part, UrlPart]"
    assert protocol["classes"]["Url"]["extra"] == "forbid"
    form = doc["forms"]["/v1/audio/transcriptions"]
    assert set(form["fields"]) == {"file", "model", "stream", "g[]"} and form["fields"]["file"]["file"]
    assert form["allowed"] == {"model": ["a", "b"]}
    assert doc["realtime_events"] == {"session.update": "SessionUpdateEvent"}
    assert doc["engine_generate"] == {"prompt": {"type": "Optional[str]", "required": False},
                                      "stream": {"type": "bool", "required": False}}
    opts = doc["server_options"]
    assert set(opts) == {"--tp-size", "--tensor-parallel-size", "--tokenizer-path", "--trust-remote-code",
                         "--mm-feature-transport", "--enable-x", "--no-enable-x", "--config", "--level"}
    assert opts["--trust-remote-code"]["arity"] == "none" and opts["--level"]["arity"] == "optional"
    assert opts["--mm-feature-transport"]["choices"] == ["cpu", "cuda_ipc"]
    assert "hidden" in doc["server_fields"] and "plain" in doc["server_fields"]


def test_pinned_target_judges_requests_and_launches(kb, upstream):
    _upstream(upstream)
    list_tree(load_config(kb), "sglang", str(upstream.path))
    pinned = contracts.load_pinned(kb, "sglang")

    def chat(body):
        return contracts.check_call(pinned, SimpleNamespace(kind="chat", method="POST", path="/c", body=body,
                                                            files={}, events=[]))
    good = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}], "must": 1}
    assert chat(good) == []
    assert chat(dict(good, speaker="x", must=1)) == []  # an alias is a known key
    bad = json.loads(json.dumps(good))
    bad["messages"][0]["content"][0]["image_url"]["detail"] = "high"
    assert "messages.0.content.0.image_url.detail: expected one of ['auto', 'low'], got 'high'" in chat(bad)[0]
    bad["messages"][0]["content"][0]["image_url"] = {"url": "u", "bogus": 1}
    assert "unknown key of Url (extra keys forbidden)" in chat(bad)[0]
    assert chat({"messages": [], "must": 1, "rid": 3})[0].endswith("rid: expected str, got number")  # inherited
    assert "must: required by ChatCompletionRequest, missing" in chat({"messages": []})[0]
    assert "unknown key of ChatCompletionRequest (upstream ignores it)" in chat(dict(good, extra=1))[0]
    lenient = contracts.check_call(pinned, SimpleNamespace(kind="chat", method="POST", path="/c",
                                                           body=dict(good, extra=1), files={}, events=[]), strict=False)
    assert lenient == []
    argv = ["python", "-m", "sglang.launch_server", "--tp", "2", "--trust-remote-code=yes", "--config",
            "--mm-feature-transport", "gpu", "--tensor", "2", "--no-enable-x"]
    problems = contracts.check_launch(pinned, argv, {})
    assert [p.split(" in ")[0] for p in problems] == [
        "launch flag --trust-remote-code is a switch and takes no value", "launch flag --config expects a value",
        "launch flag --mm-feature-transport value 'gpu' is not one of ['cpu', 'cuda_ipc']"]
    assert contracts.check_launch(pinned, ["python", "-m", "x", "--t", "1"], {})[0].startswith(
        "launch flag --t ambiguous: it abbreviates --tensor-parallel-size, --tokenizer-path, --tp-size")
    assert contracts.check_engine_init(pinned, {"tp_size": 1, "tp": 2}) == [
        f"sglang.Engine(tp=...) -> {pinned.label} ServerArgs: not a server-argument field"]


def test_argument_resolution_follows_argparse_abbreviations():
    table = {"--tp-size": {"arity": "one"}, "--port": {"arity": "one"}, "--port-range": {"arity": "one"}}
    assert upstream_args.resolve("--tp", table) == ("--tp-size", "")
    assert upstream_args.resolve("--port", table) == ("--port", "")  # exact beats prefix
    assert upstream_args.resolve("--po", table)[0] is None and "ambiguous" in upstream_args.resolve("--po", table)[1]
    assert upstream_args.check_argv(["--tp=2", "--port", "1"], table) == []


def test_schema_unions_pick_the_member_that_fits():
    schema = Schema({"classes": {
        "A": {"bases": ["BaseModel"], "fields": {"type": {"type": "Literal['a']", "required": True},
                                                 "n": {"type": "int", "required": False}}, "kind": "class"},
        "B": {"bases": ["BaseModel"], "fields": {"type": {"type": "Literal['b']", "required": True}}, "kind": "class"},
        "Open": {"bases": ["SomeSdkType"], "fields": {}, "kind": "class"}}, "aliases": {"AB": "Union[A, B]"}})
    assert schema.check([{"type": "b"}], "List[AB]") == []
    assert [str(p) for p in schema.check([{"type": "a", "n": "x"}], "List[AB]")] == ["0.n: expected int, got string"]
    assert [str(p) for p in schema.check({"type": "c"}, "AB")] == ["(body): expected Union[A, B], got object of type 'c'"]
    assert schema.check({"anything": 1}, "Open") == []  # a base from elsewhere: its keys are unknown to us
    assert schema.check({"k": [1, 2.5]}, "dict[str, list[float]] | None") == []
    assert schema.check(None, "'A' | None") == [] and schema.check(True, "int")[0].message == "expected int, got boolean"


def test_missing_release_says_how_to_get_it(tmp_path):
    with pytest.raises(contracts.ReleaseMissing, match="run ./scripts/bootstrap"):
        contracts.load_release(str(tmp_path))


def test_shipped_contract_facts_are_at_the_pins(repo_root: Path):
    config = load_config(repo_root)
    for repo in ("sglang", "sglang-omni"):
        doc = json.loads(contract_path(repo_root, repo).read_text())
        assert doc["commit"] == config.repo(repo).pinned
    sglang = json.loads(contract_path(repo_root, "sglang").read_text())
    listed = set(json.loads((repo_root / "references/trees/sglang.symbols.json").read_text())["flags"])
    # the AST reading is the stricter one: every option it finds, the looser listing has too
    assert {o for o in sglang["server_options"] if not o.startswith("--no-")} <= listed
    assert "--keep-mm-feature-on-device" in sglang["server_options"] and "--mm-feature-transport" in sglang["server_options"]


OMNI_SERVE = '''
def serve(
    ctx: typer.Context,
    model_path: Annotated[str | None, typer.Option(help="m")] = None,
    colocate: Annotated[bool, typer.Option("--colocate", help="c")] = False,
    text_only: Annotated[bool, typer.Option(help="t")] = False,
    talker_gpu: Annotated[int | None, typer.Option("--talker-gpu", "--talker_gpu")] = None,
    level: Annotated[Literal["info", "debug"], typer.Option(help="l")] = "info",
    stage: Annotated[list[str] | None, typer.Option("--stage")] = None,
    force: bool = typer.Option(False, "--force/--no-force"),
    name: Annotated[str, typer.Argument()] = "x",
) -> None:
    pass
'''
OMNI_APP = 'app.command("serve", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(_serve)\n'
OMNI_SCHEMA = '''
class EngineArgs(BaseModel):
    model_config = ConfigDict(extra="allow")
    mem_fraction_static: float | None = None

class StageConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    engine_stage: ClassVar[bool] = False
    name: str
    gpu: int | list[int] | None = None
    tp_size: int = 1
    engine: EngineArgs | None = None
    env: dict[str, str] = Field(default_factory=dict)

class EngineStageConfig(StageConfig):
    engine_stage: ClassVar[bool] = True

class PipelineConfig(BaseModel):
    model_path: str
    stages: list[StageConfig]
'''
OMNI_QWEN = '''
def stages():
    return [EngineStageConfig(name="thinker", gpu=0), StageConfig(name="code2wav", gpu=0)]
'''
OMNI_SPEECH = '''
class SpeechService:
    def prepare(self, request):
        response_format = normalize(request.response_format)
        stream = request.stream or request.stream_format == "sse"
        if stream and response_format != "pcm":
            raise bad_request("stream=true requires response_format='pcm'")
'''


def _omni(upstream, dotted: bool) -> None:
    upstream.write("sglang_omni/cli/serve.py", OMNI_SERVE)
    upstream.write("sglang_omni/cli/__init__.py", OMNI_APP)
    upstream.write("sglang_omni/config/schema.py", OMNI_SCHEMA)
    upstream.write("sglang_omni/models/qwen3_omni/config.py", OMNI_QWEN)
    upstream.write("sglang_omni/serve/speech_service.py", OMNI_SPEECH)
    upstream.write("sglang_omni/serve/protocol.py", 'SUPPORTED_TTS_RESPONSE_FORMATS = frozenset({"wav", "pcm"})\n'
                   "class CreateSpeechRequest(BaseModel):\n    input: str\n    response_format: str = 'wav'\n"
                   "    stream: bool = False\n    stream_format: str = 'audio'\n")
    upstream.write("sglang_omni/__init__.py", '__version__ = "0.1.4"\n')
    if dotted:
        upstream.write("sglang_omni/config/compat.py", "def canonicalize_dotted_key(key, config):\n    pass\n")
    upstream.commit("omni (#2)")


@pytest.mark.parametrize("dotted", [False, True])
def test_sgl_omni_serve_options_and_stage_overrides_are_facts(kb, upstream, dotted):
    _omni(upstream, dotted)
    list_tree(load_config(kb), "sglang-omni", str(upstream.path))
    pinned = contracts.load_pinned(kb, "sglang-omni")
    serve = pinned.facts["cli"]["serve"]
    assert pinned.facts["version"] == "0.1.4" and serve["extra_args"] is True
    assert set(serve["options"]) == {"--model-path", "--colocate", "--text-only", "--no-text-only", "--talker-gpu",
                                     "--talker_gpu", "--level", "--stage", "--force", "--no-force"}
    opts = serve["options"]
    assert opts["--colocate"]["arity"] == "none" and opts["--stage"]["arity"] == "one"
    assert opts["--level"]["choices"] == ["info", "debug"]
    assert pinned.facts["rules"]["CreateSpeechRequest"] == [
        {"when": {"stream": True}, "require": {"response_format": "pcm"}},
        {"when": {"stream_format": "sse"}, "require": {"response_format": "pcm"}}]
    assert pinned.facts["allowed"] == {"CreateSpeechRequest": {"response_format": ["pcm", "wav"]}}

    def launch(*words):
        return contracts.check_launch(pinned, ["sgl-omni", "serve", "--model-path", "m", *words], {})
    assert launch("--colocate", "--talker-gpu", "1", "--level", "debug", "--stage", "a", "--stage", "b") == []
    assert launch("--talker", "1")[0].startswith("launch flag --talker unrecognized")  # no abbreviations in click
    assert "--level value 'loud' is not one of ['info', 'debug']" in launch("--level", "loud")[0]
    overrides = ["--thinker.tp_size", "2", "--thinker.gpu", "[0,1]", "--thinker.engine.anything", "1",
                 "--code2wav.env.X-Y", "1", "--code2wav.gpu=0"]
    if not dotted:
        assert [p.split(" in ")[0] for p in launch(*overrides)] == [
            f"launch flag {f} unrecognized" for f in overrides[::2][:4] + ["--code2wav.gpu"]]
        return
    assert serve["stage_overrides"]["stages"] == {"code2wav": ["StageConfig"], "thinker": ["EngineStageConfig"]}
    assert launch(*overrides) == []
    bad = [p.split(" is not a stage override the pipeline config takes: ")[1].split(" in sglang-omni")[0]
           for p in launch("--thinker.gpu", "0,1", "--talker.gpu", "1", "--code2wav.engine.x", "1",
                           "--thinker.tp", "2", "--thinker.tp_size.x", "2")]
    assert bad[0].startswith("value '0,1': expected int | list[int] | None")
    assert bad[1].startswith("does not start from a stage name of the Qwen3-Omni pipeline configs (stages: code2wav,")
    assert bad[2] == "engine.* exists only on engine stages (EngineStageConfig); code2wav is a StageConfig"
    assert bad[3].startswith("'tp' is not a field of EngineStageConfig")
    assert bad[4] == "'tp_size' of EngineStageConfig is a int value, not a settings group"
    assert launch("--thinker")[0].startswith("launch flag --thinker unrecognized")  # no dot: not an override


def test_missing_omni_release_says_how_to_get_it(tmp_path):
    with pytest.raises(contracts.ReleaseMissing, match="no sglang-omni wheel at .* run ./scripts/bootstrap"):
        contracts.load_release(str(tmp_path), "sglang-omni")

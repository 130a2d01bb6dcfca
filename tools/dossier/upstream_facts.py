"""Facts about upstream's request contract, read from source by AST (nothing upstream runs).

What a lane may send is decided by upstream's request models (field names and type
annotations), its form-handler parameters, its realtime event table, `Engine.generate`'s
parameters and its server arguments. This module lists those as data: names, annotation
text, choices, defaults-or-not. `dossier tree` stores them for the pinned commits in
references/trees/<repo>.contract.json; dossier.contracts reads the released wheel the same way.
"""

from __future__ import annotations

import ast
from typing import Callable

from .upstream_readers import (call_name, constant_set, dict_table, digest, form_routes, function_params,
                               keyword_args, literal, parse_source, request_rules)

Reader = Callable[[str], "str | None"]  # repository path -> source text, or None when absent

# What each repository's contract is made of (repository paths).
SGLANG_FILES = {
    "protocol": "python/sglang/srt/entrypoints/openai/protocol.py",
    "realtime": "python/sglang/srt/entrypoints/openai/realtime/protocol.py",
    "session": "python/sglang/srt/entrypoints/openai/realtime/session.py",
    "io_struct": "python/sglang/srt/managers/io_struct.py",
    "api_types": "python/sglang/api/v1/api_types.py",
    "http_server": "python/sglang/srt/entrypoints/http_server.py",
    "engine": "python/sglang/srt/entrypoints/engine.py",
    "server_args": "python/sglang/srt/server_args.py",
}
SGLANG_MODELS = {
    "protocol": ("ChatCompletionRequest", "ChatCompletionStreamResponse", "TranscriptionRequest",
                 "TranscriptionResponse", "TranscriptionStreamResponse"),
    "io_struct": ("GenerateReqInput",),
}
SGLANG_FORMS = ("/v1/audio/transcriptions",)
SGLANG_ARG_FOLDER = "python/sglang/srt/arg_groups/fields/"

OMNI_FILES = {
    "protocol": "sglang_omni/serve/protocol.py",
    "speech_service": "sglang_omni/serve/speech_service.py",
    "cli": "sglang_omni/cli/serve.py",          # `sgl-omni serve` ([project.scripts] sgl-omni = sglang_omni.cli:app)
    "cli_app": "sglang_omni/cli/__init__.py",   # registers serve, with its context_settings
    "config_schema": "sglang_omni/config/schema.py",
    "config_compat": "sglang_omni/config/compat.py",  # dotted stage overrides with the implied stages. prefix
    "qwen3_omni_config": "sglang_omni/models/qwen3_omni/config.py",
    "init": "sglang_omni/__init__.py",  # __version__: which release's spelling a pinned commit has
}
OMNI_MODELS = ("ChatCompletionRequest", "ChatCompletionStreamResponse", "CreateSpeechRequest")
# Example launchers with an argparse of their own (before #1070 made them wrappers over presets).
OMNI_LAUNCHERS = ("examples/run_qwen3_omni_speech_server.py", "examples/run_qwen3_omni_server.py")
OMNI_CLI = "sgl-omni"


# ----------------------------------------------------------------------------- models


def _model_config(node: ast.ClassDef) -> dict:
    out = {}
    for stmt in node.body:
        if (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "model_config"
                                                 for t in stmt.targets) and isinstance(stmt.value, ast.Call)):
            for key, value in keyword_args(stmt.value).items():
                try:
                    out[key] = literal(value)
                except KeyError:
                    pass
    return out


def _field(stmt: ast.AnnAssign) -> dict:
    """Type text, whether it must be sent, and the other names a body may use for it."""
    value, required, aliases = stmt.value, stmt.value is None, []
    if isinstance(value, ast.Call) and call_name(value) in ("Field", "field"):
        kw = keyword_args(value)
        first = value.args[0] if value.args else None
        has_default = "default" in kw or "default_factory" in kw or (
            first is not None and not (isinstance(first, ast.Constant) and first.value is Ellipsis))
        required = not has_default and call_name(value) == "Field"
        for key in ("alias", "validation_alias"):
            node = kw.get(key)
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                aliases.append(node.value)
            elif isinstance(node, ast.Call) and call_name(node) == "AliasChoices":
                aliases += [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    out = {"type": ast.unparse(stmt.annotation), "required": required}
    if aliases:
        out["aliases"] = aliases
    return out


def _class_facts(node: ast.ClassDef) -> dict:
    fields = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            name, text = stmt.target.id, ast.unparse(stmt.annotation)
            if name.startswith("_") or text.startswith(("ClassVar", "typing.ClassVar")):
                continue
            fields[name] = _field(stmt)
    config = _model_config(node)
    decorators = {call_name(d) for d in node.decorator_list}
    out = {"bases": [ast.unparse(b) for b in node.bases], "fields": fields,
           "kind": "dataclass" if "dataclass" in decorators else "class"}
    if config.get("extra"):
        out["extra"] = config["extra"]
    if config.get("populate_by_name"):
        out["populate_by_name"] = True
    return out


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Module-level type aliases (`Name = Union[...]`, `Name: TypeAlias = ...`) as annotation text."""
    out = {}
    for stmt in tree.body:
        target, value = None, None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target.id, stmt.value
        if target and isinstance(value, (ast.Subscript, ast.BinOp, ast.Name)):
            out[target] = ast.unparse(value)
    return out


def _names_in(text: str) -> set[str]:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return set()
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for n in ast.walk(tree):  # string forward references
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
            names.add(n.value)
    return names


def models(source: str | None, roots) -> dict:
    """{"classes": {...}, "aliases": {...}}: the root classes and every class or alias they reach."""
    tree = parse_source(source)
    if tree is None:
        return {"classes": {}, "aliases": {}}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    aliases = _aliases(tree)
    out_c, out_a, todo = {}, {}, list(roots)
    while todo:
        name = todo.pop()
        if name in out_c or name in out_a:
            continue
        if name in classes:
            facts = out_c[name] = _class_facts(classes[name])
            refs = set(facts["bases"]) | {n for f in facts["fields"].values() for n in _names_in(f["type"])}
        elif name in aliases:
            out_a[name] = aliases[name]
            refs = _names_in(aliases[name])
        else:
            continue
        todo += sorted(refs)
    return {"classes": dict(sorted(out_c.items())), "aliases": dict(sorted(out_a.items()))}


def stage_overrides(read: Reader) -> dict | None:
    """What `sgl-omni serve --<stage>.<field> value` may write (0.1.4 on): Qwen3-Omni's stage names with
    the stage classes that build them, the pipeline's top-level fields and the stage schema."""
    f = OMNI_FILES
    if "def canonicalize_dotted_key" not in (read(f["config_compat"]) or ""):
        return None  # no implied-prefix stage overrides in this version
    stages: dict[str, list[str]] = {}
    for node in ast.walk(parse_source(read(f["qwen3_omni_config"])) or ast.Module(body=[], type_ignores=[])):
        if isinstance(node, ast.Call) and call_name(node).endswith("StageConfig"):
            name = keyword_args(node).get("name")
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                stages.setdefault(name.value, [])
                if call_name(node) not in stages[name.value]:
                    stages[name.value].append(call_name(node))
    schema_source = read(f["config_schema"])
    roots = sorted({c for classes in stages.values() for c in classes})
    pipeline = models(schema_source, ["PipelineConfig"])["classes"].get("PipelineConfig", {})
    # `engine.*` exists only on stage types that declare `engine_stage: ClassVar[bool] = True`
    engine = sorted(n.name for n in (parse_source(schema_source) or ast.Module(body=[], type_ignores=[])).body
                    if isinstance(n, ast.ClassDef) and any(
                        isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
                        and st.target.id == "engine_stage" and isinstance(st.value, ast.Constant)
                        and st.value.value is True for st in n.body))
    return {"stages": {k: sorted(v) for k, v in sorted(stages.items())}, "engine_stages": engine,
            "top_fields": sorted(pipeline.get("fields", {})), "schema": models(schema_source, roots)}


# ------------------------------------------------------------------------ per repository


def sglang_contract(read: Reader, paths) -> dict:
    """sglang's request contract: models, the transcription form, realtime events, Engine.generate, server args."""
    from . import upstream_args

    f = SGLANG_FILES
    arg_paths = [f["server_args"], *sorted(p for p in paths if p.startswith(SGLANG_ARG_FOLDER) and p.endswith(".py"))]
    arg_sources = {p: s for p in arg_paths if (s := read(p))}
    return {
        "models": {f[key]: models(read(f[key]), roots) for key, roots in SGLANG_MODELS.items()},
        "forms": form_routes(read(f["http_server"]), SGLANG_FORMS),
        "realtime_events": dict_table(read(f["session"]), "_CLIENT_EVENT_TYPES"),
        "engine_generate": function_params(read(f["engine"]), "Engine.generate"),
        "server_options": upstream_args.options(arg_sources),
        "server_fields": upstream_args.fields(arg_sources),
        "digests": {f[k]: digest(read(f[k])) for k in ("protocol", "realtime", "io_struct", "api_types")},
    }


def omni_contract(read: Reader) -> dict:
    """sglang-omni's: the OpenAI-style models, the speech refusals, `sgl-omni serve`'s options and stage
    overrides, and each example launcher that still has an argparse of its own."""
    from . import upstream_args

    f = OMNI_FILES
    command = upstream_args.typer_command(read(f["cli_app"]), "serve")
    cli = {}
    if command is not None:
        cli["serve"] = {**command, "options": upstream_args.typer_options(read(f["cli"]), "serve", f["cli"]),
                        "stage_overrides": stage_overrides(read)}
    launchers = {p: upstream_args.options({p: s}) for p in OMNI_LAUNCHERS if (s := read(p))}
    formats = constant_set(read(f["protocol"]), "SUPPORTED_TTS_RESPONSE_FORMATS")
    version = next((stmt.value.value for stmt in (parse_source(read(f["init"])) or ast.Module(body=[], type_ignores=[])).body
                    if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__version__"
                                                            for t in stmt.targets)
                    and isinstance(stmt.value, ast.Constant)), None)
    return {
        "version": version,
        "models": {f["protocol"]: models(read(f["protocol"]), OMNI_MODELS)},
        "rules": {"CreateSpeechRequest": request_rules(read(f["speech_service"]))},
        "allowed": {"CreateSpeechRequest": {"response_format": formats}} if formats else {},
        "cli": cli,
        "launchers": {p: t for p, t in launchers.items() if t},  # a wrapper over a preset declares none
        "digests": {f["protocol"]: digest(read(f["protocol"]))},
    }


def contract(repo: str, read: Reader, paths) -> dict | None:
    """The contract facts of `repo` (None for a repository without one)."""
    from functools import lru_cache

    cached = lru_cache(maxsize=None)(read)
    if repo == "sglang":
        return sglang_contract(cached, paths)
    if repo == "sglang-omni":
        return omni_contract(cached)
    return None

"""Facts about upstream's request contract, read from source by AST (nothing upstream runs).

What a lane may send is decided by upstream's request models (field names and type
annotations), its form-handler parameters, its realtime event table, `Engine.generate`'s
parameters and its server arguments. This module lists those as data: names, annotation
text, choices, defaults-or-not. `dossier tree` stores them for the pinned commits in
references/trees/<repo>.contract.json; dossier.contracts reads the released wheel the same way.
"""

from __future__ import annotations

import ast
import hashlib
from typing import Callable

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


def _parse(source: str | None) -> ast.Module | None:
    try:
        return ast.parse(source) if source else None
    except SyntaxError:
        return None


def _const(node):
    """A literal's value (str, number, bool, None, list/tuple of those); KeyError when not literal."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise KeyError("not a literal") from None


def _call_name(node) -> str:
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _kwargs(call: ast.Call) -> dict[str, ast.AST]:
    return {k.arg: k.value for k in call.keywords if k.arg}


# ----------------------------------------------------------------------------- models


def _model_config(node: ast.ClassDef) -> dict:
    out = {}
    for stmt in node.body:
        if (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "model_config"
                                                 for t in stmt.targets) and isinstance(stmt.value, ast.Call)):
            for key, value in _kwargs(stmt.value).items():
                try:
                    out[key] = _const(value)
                except KeyError:
                    pass
    return out


def _field(stmt: ast.AnnAssign) -> dict:
    """Type text, whether it must be sent, and the other names a body may use for it."""
    value, required, aliases = stmt.value, stmt.value is None, []
    if isinstance(value, ast.Call) and _call_name(value) in ("Field", "field"):
        kw = _kwargs(value)
        first = value.args[0] if value.args else None
        has_default = "default" in kw or "default_factory" in kw or (
            first is not None and not (isinstance(first, ast.Constant) and first.value is Ellipsis))
        required = not has_default and _call_name(value) == "Field"
        for key in ("alias", "validation_alias"):
            node = kw.get(key)
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                aliases.append(node.value)
            elif isinstance(node, ast.Call) and _call_name(node) == "AliasChoices":
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
    decorators = {_call_name(d) for d in node.decorator_list}
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
    tree = _parse(source)
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


# ------------------------------------------------------------------ handlers and tables


def _allowed_values(body: list[ast.stmt]) -> dict[str, list]:
    """`if name not in [..literals..]` (a refusal) -> the values `name` may take."""
    out = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
                and isinstance(node.test.ops[0], ast.NotIn) and isinstance(node.test.left, ast.Name)):
            try:
                values = _const(node.test.comparators[0])
            except KeyError:
                continue
            if isinstance(values, (list, tuple, set, frozenset)):
                out[node.test.left.id] = sorted(values, key=str)
    return out


def form_routes(source: str | None, routes) -> dict:
    """Per route: each Form/File parameter (wire name, annotation, required) and allowed values."""
    tree, out = _parse(source), {}
    for node in ast.walk(tree) if tree else []:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        route = next((d.args[0].value for d in node.decorator_list if isinstance(d, ast.Call) and d.args
                      and isinstance(d.args[0], ast.Constant) and d.args[0].value in routes), None)
        if route is None:
            continue
        args = node.args.args + node.args.kwonlyargs
        defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + node.args.defaults \
            + node.args.kw_defaults
        fields = {}
        for arg, default in zip(args, defaults):
            if not (isinstance(default, ast.Call) and _call_name(default) in ("Form", "File")):
                continue
            kw = _kwargs(default)
            alias = kw.get("alias")
            first = default.args[0] if default.args else kw.get("default")
            required = first is None or (isinstance(first, ast.Constant) and first.value is Ellipsis)
            name = alias.value if isinstance(alias, ast.Constant) else arg.arg
            fields[name] = {"type": ast.unparse(arg.annotation) if arg.annotation else "Any",
                            "required": required, "file": _call_name(default) == "File", "param": arg.arg}
        out[route] = {"fields": fields, "allowed": _allowed_values(node.body)}
    return out


def dict_table(source: str | None, name: str) -> dict[str, str]:
    """A module-level `NAME = {"literal": ClassName, ...}` table, as {key: class name}."""
    for stmt in (_parse(source) or ast.Module(body=[], type_ignores=[])).body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
            (stmt.target if isinstance(stmt, ast.AnnAssign) else None)
        if isinstance(target, ast.Name) and target.id == name and isinstance(stmt.value, ast.Dict):
            return {k.value: ast.unparse(v) for k, v in zip(stmt.value.keys, stmt.value.values)
                    if isinstance(k, ast.Constant)}
    return {}


def function_params(source: str | None, qualname: str) -> dict[str, dict]:
    """Parameters of `Class.method` or `function` (self dropped): annotation text and required."""
    cls, _, fn = qualname.rpartition(".")
    tree = _parse(source)
    scope = tree.body if tree else []
    if cls:
        scope = next((n.body for n in scope if isinstance(n, ast.ClassDef) and n.name == cls), [])
    node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == fn), None)
    if node is None:
        return {}
    a = node.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = {}
    for arg, default in list(zip(positional, defaults)) + list(zip(a.kwonlyargs, a.kw_defaults)):
        if arg.arg in ("self", "cls"):
            continue
        out[arg.arg] = {"type": ast.unparse(arg.annotation) if arg.annotation else "Any", "required": default is None}
    return out


def _conditions(node, local: dict[str, ast.AST]) -> list[dict]:
    """The request conditions a test stands for: `request.x` -> {x: True}, `request.x == "v"` -> {x: "v"};
    a local name assigned from them (`stream = request.stream or request.stream_format == "sse"`)
    stands for each of its `or` members."""
    if isinstance(node, ast.Attribute):
        return [{node.attr: True}]
    if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)
            and isinstance(node.left, ast.Attribute) and isinstance(node.comparators[0], ast.Constant)):
        return [{node.left.attr: node.comparators[0].value}]
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return [c for v in node.values for c in _conditions(v, local)]
    if isinstance(node, ast.Name) and node.id in local:
        return _conditions(local.pop(node.id), local)
    return []


def request_rules(source: str | None) -> list[dict]:
    """`if <request condition> and <field> != "<value>"` refusals -> {"when": {flag: value}, "require": {field: value}}."""
    out = []
    for fn in ast.walk(_parse(source) or ast.Module(body=[], type_ignores=[])):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        local = {t.id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
                 for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(fn):
            if not (isinstance(node, ast.If) and isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)
                    and len(node.test.values) == 2):
                continue
            flag, cmp = node.test.values
            if (isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and isinstance(cmp.ops[0], ast.NotEq)
                    and isinstance(cmp.left, ast.Name) and isinstance(cmp.comparators[0], ast.Constant)):
                for when in _conditions(flag, dict(local)):
                    rule = {"when": when, "require": {cmp.left.id: cmp.comparators[0].value}}
                    if rule not in out:
                        out.append(rule)
    return out


def constant_set(source: str | None, name: str) -> list | None:
    """A module-level `NAME = frozenset({...})` (or a literal set, list or tuple), sorted; None when absent."""
    for stmt in (_parse(source) or ast.Module(body=[], type_ignores=[])).body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == name):
            value = stmt.value
            if isinstance(value, ast.Call) and _call_name(value) in ("frozenset", "set") and value.args:
                value = value.args[0]
            try:
                return sorted(_const(value), key=str)
            except (KeyError, TypeError):
                return None
    return None


def stage_overrides(read: Reader) -> dict | None:
    """What `sgl-omni serve --<stage>.<field> value` may write (0.1.4 on): Qwen3-Omni's stage names with
    the stage classes that build them, the pipeline's top-level fields and the stage schema."""
    f = OMNI_FILES
    if "def canonicalize_dotted_key" not in (read(f["config_compat"]) or ""):
        return None  # no implied-prefix stage overrides in this version
    stages: dict[str, list[str]] = {}
    for node in ast.walk(_parse(read(f["qwen3_omni_config"])) or ast.Module(body=[], type_ignores=[])):
        if isinstance(node, ast.Call) and _call_name(node).endswith("StageConfig"):
            name = _kwargs(node).get("name")
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                stages.setdefault(name.value, [])
                if _call_name(node) not in stages[name.value]:
                    stages[name.value].append(_call_name(node))
    schema_source = read(f["config_schema"])
    roots = sorted({c for classes in stages.values() for c in classes})
    pipeline = models(schema_source, ["PipelineConfig"])["classes"].get("PipelineConfig", {})
    # `engine.*` exists only on stage types that declare `engine_stage: ClassVar[bool] = True`
    engine = sorted(n.name for n in (_parse(schema_source) or ast.Module(body=[], type_ignores=[])).body
                    if isinstance(n, ast.ClassDef) and any(
                        isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
                        and st.target.id == "engine_stage" and isinstance(st.value, ast.Constant)
                        and st.value.value is True for st in n.body))
    return {"stages": {k: sorted(v) for k, v in sorted(stages.items())}, "engine_stages": engine,
            "top_fields": sorted(pipeline.get("fields", {})), "schema": models(schema_source, roots)}


def digest(source: str | None) -> str | None:
    return hashlib.sha256(source.encode()).hexdigest() if source is not None else None


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
    version = next((stmt.value.value for stmt in (_parse(read(f["init"])) or ast.Module(body=[], type_ignores=[])).body
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

"""What upstream accepts from a lane: request bodies, forms, websocket events, Engine calls, launch flags.

Two kinds of target. The released wheels that scripts/bootstrap installs (sglang and
sglang-omni, the versions in pyproject.toml [tool.dossier.contract]; no dependencies, outside
site-packages) are read for real: their pydantic and msgspec request models are imported
without running `sglang/__init__.py` or `sglang_omni/__init__.py` (which need torch), by
registering empty parent packages; their CLI and server arguments are read by AST. The
pinned commits are read from the facts `dossier tree` stored in
references/trees/<repo>.contract.json (names and annotation text, no code).

A lane's request arrives as a `Call`-like object (playbook/lanes/_lane.py): kind, method,
path, body, files, events. Every problem comes back as one line naming the upstream model.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import sys
import types
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import upstream_args, upstream_facts
from .errors import DossierError
from .upstream_types import Problem, Schema, form_value_problems

F = upstream_facts.SGLANG_FILES
_PACKAGES = ("sglang", "sglang.srt", "sglang.srt.entrypoints", "sglang.srt.entrypoints.openai",
             "sglang.srt.entrypoints.openai.realtime", "sglang.api", "sglang.api.v1")
_ENV_NAME = re.compile(r"\b(SGLANG_[A-Z0-9_]+)\b")


class ReleaseMissing(DossierError):
    """A wheel the contract names is not installed (run ./scripts/bootstrap)."""


RELEASE_REPOS = ("sglang", "sglang-omni")  # the keys of [tool.dossier.contract]


def release_version(root: Path, repo: str = "sglang") -> str:
    """The release of `repo` pinned in pyproject.toml ([tool.dossier.contract] sglang / sglang-omni)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    try:
        with open(root / "pyproject.toml", "rb") as fh:
            return str(tomllib.load(fh)["tool"]["dossier"]["contract"][repo])
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise DossierError(f"pyproject.toml: no [tool.dossier.contract] {repo} version ({exc})") from None


def release_folder(version: str, repo: str = "sglang") -> Path:
    """Where scripts/bootstrap put the wheel: .venv/upstream/<repo>-<version> of this interpreter
    (DOSSIER_UPSTREAM_SGLANG / DOSSIER_UPSTREAM_SGLANG_OMNI name another folder)."""
    override = os.environ.get("DOSSIER_UPSTREAM_" + repo.upper().replace("-", "_"))
    return Path(override) if override else Path(sys.prefix) / "upstream" / f"{repo}-{version}"


def installed_release(root: Path, repo: str) -> "Target":
    """The release of `repo` that pyproject.toml pins, as installed by scripts/bootstrap (ReleaseMissing if not)."""
    version = release_version(root, repo)
    return load_release(str(release_folder(version, repo)), repo)


# ------------------------------------------------------------------------------- targets


@dataclass
class Target:
    repo: str                 # sglang | sglang-omni
    version: str              # a release ("0.5.23") or the pinned commit
    pinned: bool
    facts: dict
    env: set[str] = field(default_factory=set)
    modules: dict = field(default_factory=dict)  # the release's imported protocol modules

    @property
    def label(self) -> str:
        return f"{self.repo} pinned {self.version[:12]}" if self.pinned else f"{self.repo} {self.version}"

    def schema(self, path: str) -> Schema:
        return Schema(self.facts.get("models", {}).get(path, {}))


def _reader(folder: Path):
    def read(path: str) -> str | None:
        file = folder / path.removeprefix("python/")
        return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None
    return read


def _import_protocols(folder: Path) -> dict:
    """protocol.py, realtime/protocol.py and api_types.py of the wheel, with no sglang/__init__.py run."""
    current = sys.modules.get("sglang")
    if current is not None and getattr(current, "__dossier_contract__", None) != str(folder):
        raise DossierError(f"another sglang package is already imported ({getattr(current, '__file__', '?')})")
    for name in _PACKAGES:
        module = types.ModuleType(name)
        module.__path__ = [str(folder / name.replace(".", "/"))]
        module.__dossier_contract__ = str(folder)
        sys.modules[name] = module
    # protocol.py imports one helper from sglang/utils.py, whose own imports (numpy, IPython,
    # requests, sglang.srt.environ) the contract does not need: a stub module holds that helper.
    utils = types.ModuleType("sglang.utils")
    utils.convert_json_schema_to_str = lambda schema: schema if isinstance(schema, str) else json.dumps(schema)
    sys.modules["sglang.utils"] = utils
    names = {"protocol": "sglang.srt.entrypoints.openai.protocol",
             "realtime": "sglang.srt.entrypoints.openai.realtime.protocol", "api_types": "sglang.api.v1.api_types"}
    try:
        return {key: importlib.import_module(name) for key, name in names.items()}
    except ImportError as exc:
        raise DossierError(f"cannot import sglang's protocol modules from {folder}: {exc} "
                           "(./scripts/bootstrap installs the contract extra)") from None


def _import_omni_protocols(folder: Path) -> dict:
    """sglang_omni/serve/protocol.py of the wheel (it needs only pydantic and client/types.py), no __init__ run."""
    current = sys.modules.get("sglang_omni")
    if current is not None and getattr(current, "__dossier_contract__", None) != str(folder):
        raise DossierError(f"another sglang_omni package is already imported ({getattr(current, '__file__', '?')})")
    for name in ("sglang_omni", "sglang_omni.client", "sglang_omni.serve"):
        module = types.ModuleType(name)
        module.__path__ = [str(folder / name.replace(".", "/"))]
        module.__dossier_contract__ = str(folder)
        sys.modules[name] = module
    try:
        return {"protocol": importlib.import_module("sglang_omni.serve.protocol")}
    except ImportError as exc:
        raise DossierError(f"cannot import sglang-omni's protocol module from {folder}: {exc} "
                           "(./scripts/bootstrap installs the contract extra)") from None


def _load_omni_release(base: Path) -> Target:
    dist = sorted(base.glob("sglang_omni-*.dist-info"))
    if not (base / "sglang_omni" / "serve" / "protocol.py").is_file() or not dist:
        raise ReleaseMissing(f"no sglang-omni wheel at {base}: run ./scripts/bootstrap")
    version = dist[-1].name[len("sglang_omni-"):-len(".dist-info")]
    read = _reader(base)
    return Target("sglang-omni", version, False, upstream_facts.omni_contract(read), set(), _import_omni_protocols(base))


@lru_cache(maxsize=None)
def load_release(folder: str, repo: str = "sglang") -> Target:
    """The installed release as a target: its real request models plus AST facts of its other files."""
    base = Path(folder)
    if repo == "sglang-omni":
        return _load_omni_release(base)
    dist = sorted(base.glob("sglang-*.dist-info"))
    if not (base / "sglang" / "srt").is_dir() or not dist:
        raise ReleaseMissing(f"no sglang wheel at {base}: run ./scripts/bootstrap")
    version = dist[-1].name[len("sglang-"):-len(".dist-info")]
    read = _reader(base)
    paths = ["python/" + p.relative_to(base).as_posix()
             for p in (base / "sglang/srt/arg_groups/fields").glob("*.py")]
    facts = upstream_facts.sglang_contract(read, paths)
    env = set(_ENV_NAME.findall(read("python/sglang/srt/environ.py") or ""))
    return Target("sglang", version, False, facts, env, _import_protocols(base))


def load_pinned(root: Path, repo: str) -> Target:
    """A pinned commit as a target, from references/trees/<repo>.contract.json (and its env listing)."""
    from .trees import contract_path, pinned_names

    path = contract_path(root, repo)
    try:
        facts = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DossierError(f"{path.relative_to(root)}: unreadable ({exc}); run `dossier tree {repo} --clone PATH`") from None
    env = pinned_names(root)[1] if repo == "sglang" else set()
    return Target(repo, facts["commit"], True, facts, env)


# ------------------------------------------------------------------------------ requests


def _pydantic_problems(model, body) -> list[Problem]:
    """Validation errors (refusals) plus keys upstream silently ignores, walking the validated model."""
    import copy

    from pydantic import BaseModel, ValidationError

    try:
        instance = model.model_validate(copy.deepcopy(body))  # some "before" validators edit their input
    except ValidationError as exc:
        # A union reports one error per member; the members whose `type` tag or required field
        # does not fit are noise, and the deepest remaining error names the field at fault.
        errors = sorted(exc.errors(), key=lambda e: (e["type"] in ("literal_error", "missing", "union_tag_invalid"),
                                                     -len(e["loc"])))[:2]
        return [Problem(".".join(str(p) for p in e["loc"] if "[" not in str(p)), e["msg"]) for e in errors]

    def walk(obj, data, path) -> list[Problem]:
        if isinstance(obj, BaseModel) and isinstance(data, dict):
            if "type" in data and getattr(obj, "type", data["type"]) != data["type"]:
                return []  # a validator converted this part to another model (inline audio -> audio_url)
            names = {}
            for name, info in type(obj).model_fields.items():
                names[name] = name
                aliases = [info.alias] if info.alias else []
                choices = getattr(info.validation_alias, "choices", None)
                aliases += list(choices) if choices else ([info.validation_alias] if isinstance(info.validation_alias, str) else [])
                names.update({a: name for a in aliases if isinstance(a, str)})
            out = []
            for key, value in data.items():
                if key in names:
                    out += walk(getattr(obj, names[key]), value, f"{path}.{key}" if path else key)
                elif type(obj).model_config.get("extra") != "allow":
                    out.append(Problem(f"{path}.{key}" if path else key,
                                       f"unknown key of {type(obj).__name__} (upstream ignores it)", unknown=True))
            return out
        if isinstance(obj, (list, tuple)) and isinstance(data, list):
            return [p for i, (o, d) in enumerate(zip(obj, data)) for p in walk(o, d, f"{path}.{i}")]
        if isinstance(obj, dict) and isinstance(data, dict):
            return [p for k, d in data.items() if k in obj for p in walk(obj[k], d, f"{path}.{k}")]
        return []

    import warnings

    with warnings.catch_warnings():  # reading a deprecated field (max_tokens) warns; we only walk it
        warnings.simplefilter("ignore", DeprecationWarning)
        return walk(instance, body, "")


def _say(call, target: Target, model: str, file: str, problems: list[Problem]) -> list[str]:
    where = f"{call.method} {call.path}" if call.path else call.kind
    return list(dict.fromkeys(f"{where} -> {target.label} {model} ({file}): {p}" for p in problems))


def _chat(target: Target, call) -> list[str]:
    if target.repo == "sglang-omni":
        file = upstream_facts.OMNI_FILES["protocol"]
        if target.modules:
            problems = _pydantic_problems(target.modules["protocol"].ChatCompletionRequest, call.body)
        else:
            problems = target.schema(file).check_model(call.body, "ChatCompletionRequest")
        return _say(call, target, "ChatCompletionRequest", file, problems)
    model = "ChatCompletionRequest"
    if target.modules:
        problems = _pydantic_problems(getattr(target.modules["protocol"], model), call.body)
    else:
        problems = target.schema(F["protocol"]).check_model(call.body, model)
    return _say(call, target, model, F["protocol"], problems)


def _generate(target: Target, call) -> list[str]:
    out = []
    if target.modules:  # the release's HTTP gate: the schema decoder runs before GenerateReqInput
        api = target.modules["api_types"]
        try:
            api.GenerateRequest.from_json_value(call.body)
        except api.JsonContractError as exc:
            out += _say(call, target, "GenerateRequest", F["api_types"], [Problem("", str(exc))])
    problems = target.schema(F["io_struct"]).check_model(call.body, "GenerateReqInput")
    return out + _say(call, target, "GenerateReqInput", F["io_struct"], problems)


def _transcription(target: Target, call) -> list[str]:
    route = target.facts.get("forms", {}).get(call.path)
    if route is None:
        return _say(call, target, "route", F["http_server"], [Problem("", "no such form route upstream")])
    fields, problems = route["fields"], []
    sent = {**{k: str(v) for k, v in call.body.items()}, **{k: None for k in call.files}}
    for key, value in sent.items():
        facts = fields.get(key)
        if facts is None:
            problems.append(Problem(key, "unknown form field of the handler (upstream ignores it)", unknown=True))
        elif facts["file"] != (value is None):
            problems.append(Problem(key, "must be sent as a file part" if facts["file"] else "must be a form field"))
        elif value is not None and (why := form_value_problems(value, facts["type"])):
            problems.append(Problem(key, why))
        elif value is not None and key in route["allowed"] and value not in route["allowed"][key]:
            problems.append(Problem(key, f"{value!r} is refused (allowed: {route['allowed'][key]})"))
    problems += [Problem(k, "required, missing") for k, f in fields.items() if f["required"] and k not in sent]
    return _say(call, target, "openai_v1_audio_transcriptions form", F["http_server"], problems)


def _event_model(target: Target, name: str, release: Target | None):
    """The pydantic class for a realtime event: the release's, when the pin's realtime/protocol.py is identical."""
    source = target if target.modules else release
    if source is None or not source.modules:
        return None
    if target is not source and target.facts["digests"].get(F["realtime"]) != source.facts["digests"].get(F["realtime"]):
        return None
    module = source.modules["realtime"]
    if hasattr(module, name):
        return getattr(module, name)
    import openai.types.realtime as rt

    return getattr(rt, name, None)


def _realtime(target: Target, call, release: Target | None) -> list[str]:
    table, out = target.facts.get("realtime_events", {}), []
    for i, event in enumerate(call.events):
        kind = event.get("type")
        name = table.get(kind)
        if name is None:
            out += _say(call, target, "_CLIENT_EVENT_TYPES", F["session"],
                        [Problem(f"event {i}", f"client event type {kind!r} is not handled (known: {sorted(table)})")])
            continue
        model = _event_model(target, name, release)
        if model is not None:
            out += _say(call, target, name, F["realtime"],
                        [Problem(f"event {i}.{p.path}", p.message, p.unknown) for p in _pydantic_problems(model, event)])
    return out


def _speech(target: Target, call) -> list[str]:
    file, model = upstream_facts.OMNI_FILES["protocol"], "CreateSpeechRequest"
    service = upstream_facts.OMNI_FILES["speech_service"]
    if target.modules:
        problems = _pydantic_problems(target.modules["protocol"].CreateSpeechRequest, call.body)
    else:
        problems = target.schema(file).check_model(call.body, model)
    for key, allowed in target.facts.get("allowed", {}).get(model, {}).items():
        value = call.body.get(key)
        if isinstance(value, str) and value.strip().lower() not in allowed:  # normalize_response_format
            problems.append(Problem(key, f"{value!r} is refused (allowed: {allowed}) ({service})"))
    for rule in target.facts.get("rules", {}).get(model, []):
        if all(call.body.get(k) == v for k, v in rule["when"].items()):
            problems += [Problem(k, f"must be {v!r} when {rule['when']} ({service})")
                         for k, v in rule["require"].items() if call.body.get(k, v) != v]
    return _say(call, target, model, file, problems)


def _engine(target: Target, call) -> list[str]:
    params, schema, problems = target.facts.get("engine_generate", {}), target.schema(F["io_struct"]), []
    for key, value in call.body.items():
        if key not in params:
            problems.append(Problem(key, "not a parameter of Engine.generate"))
        else:
            problems += schema.check(value, params[key]["type"], key)
    return _say(call, target, "Engine.generate", F["engine"], problems)


def check_call(target: Target, call, strict: bool = True, release: Target | None = None) -> list[str]:
    """Problems of one lane request for `target`; strict also reports keys upstream would ignore."""
    checks = {"chat": _chat, "generate": _generate, "transcription": _transcription, "speech": _speech,
              "engine": _engine}
    if call.kind == "realtime":
        lines = _realtime(target, call, release)
    elif call.kind in checks:
        lines = checks[call.kind](target, call)
    else:
        lines = [f"{call.kind}: no contract known for this kind of request"]
    return [line for line in lines if strict or "(upstream ignores it)" not in line]


# -------------------------------------------------------------------------------- launch


def _history(flag: str, target: Target, others, script: str | None = None) -> str:
    """Where else the flag exists, so a failure says in which version it appeared or vanished.

    The releases under test are newer than the pins (sglang 0.5.23 of 2026-10-30, sglang-omni
    0.1.9 of 2026-10-21, vs 2026-08-22); `dossier tree` moves the pins and pyproject.toml the
    releases, both forward.
    """
    for other in others:
        table = _options(other, script)
        if table and upstream_args.resolve(flag, table, other.repo == "sglang")[0]:
            if other.pinned and not target.pinned:
                return f"; {other.label} has it, so it vanished between the pin and {target.version}"
            if target.pinned and not other.pinned:
                return f"; {other.label} has it, so it appeared after the pin"
    return ""


def _options(target: Target, script: str | None) -> dict:
    """The option table of the launcher: sglang's ServerArgs, `sgl-omni serve`, or an example script's argparse."""
    if target.repo == "sglang":
        return target.facts.get("server_options", {})
    if script is None or script == "serve":
        return target.facts.get("cli", {}).get("serve", {}).get("options", {})
    launchers = target.facts.get("launchers", {})
    return next((t for p, t in launchers.items() if script.endswith(p)), {})


def _omni_launcher(argv: list[str]) -> str | None:
    """"serve" for `sgl-omni serve ...`, the script of `python examples/x.py ...`, else None."""
    if len(argv) > 1 and Path(str(argv[0])).name == upstream_facts.OMNI_CLI and argv[1] == "serve":
        return "serve"
    return next((w for w in argv[1:] if str(w).endswith(".py")), None)


def check_launch(target: Target, argv: list[str], env: dict, others=()) -> list[str]:
    """Problems of a launch command (and its environment) for `target`'s argument definitions."""
    script = _omni_launcher(argv) if target.repo == "sglang-omni" else None
    table = _options(target, script)
    if target.repo == "sglang":
        where = "ServerArgs (python/sglang/srt/server_args.py, arg_groups/fields/*.py)"
    elif script == "serve":
        where = f"`{upstream_facts.OMNI_CLI} serve` ({upstream_facts.OMNI_FILES['cli']})"
    else:
        where = f"the argparse of {script}"
    if not table:
        return [f"launch: {target.label} has no known launcher for {shlex.join(map(str, argv[:3]))}"]
    if script == "serve":
        serve = target.facts["cli"]["serve"]
        problems = upstream_args.check_typer_argv(list(map(str, argv[2:])), table, serve.get("stage_overrides"),
                                                  serve.get("extra_args", False))
    else:
        problems = upstream_args.check_argv(argv, table)
    out = [f"launch flag {flag} {why} in {target.label} {where}{_history(flag, target, others, script)}"
           for flag, why in problems]
    out += [f"launch env {name}: not an environment variable of {target.label} (srt/environ.py)"
            for name in env if name.startswith("SGLANG_") and target.env and name not in target.env]
    return out


def check_engine_init(target: Target, kwargs: dict) -> list[str]:
    """Keyword arguments of sglang.Engine(...) that are not ServerArgs fields of `target`."""
    known = set(target.facts.get("server_fields", []))
    return [f"sglang.Engine({key}=...) -> {target.label} ServerArgs: not a server-argument field"
            for key in kwargs if key not in known]


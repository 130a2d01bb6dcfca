"""What upstream accepts from a lane: request bodies, forms, websocket events, Engine calls, launch flags.

Two kinds of target (dossier.upstream_targets): the released wheels of sglang and sglang-omni
that scripts/bootstrap installs, whose pydantic and msgspec request models are used as they
are, and the pinned commits, from the facts `dossier tree` stored in
references/trees/<repo>.contract.json (names and annotation text, no code). CLI and server
arguments are AST facts for both.

A lane's request arrives as a `Call`-like object (playbook/lanes/_lane.py): kind, method,
path, body, files, events. Every problem comes back as one line naming the upstream model.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from . import upstream_args, upstream_facts
from .upstream_targets import (RELEASE_REPOS, ReleaseMissing, Target, installed_release,  # noqa: F401 (re-exported)
                               load_pinned, load_release, release_folder, release_version)
from .upstream_types import Problem, form_value_problems

F = upstream_facts.SGLANG_FILES


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


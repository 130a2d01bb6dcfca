"""Upstream command-line arguments, read by AST, and a check of a launch command against them.

sglang declares its server arguments as annotated fields (`name: A[type, "help"]` or
`A[type, Arg(aliases=..., choices=..., action=...)]`, each `--name-with-dashes`) plus a few
explicit `parser.add_argument(...)` calls; launcher scripts use plain `add_argument`.
sglang-omni's `sgl-omni serve` is a typer command: each parameter of `serve` is an option
(`Annotated[type, typer.Option("--name", "--alias")]`), and the words typer does not know
go to the pipeline config as dotted stage overrides (`--thinker.tp_size 2`, since 0.1.4).
Each option becomes {"dest", "arity", "choices"}: arity "none" (a switch), "one", "many",
"optional" or "unknown" (a custom action we cannot judge).
"""

from __future__ import annotations

import ast
import json

_SWITCH_ACTIONS = ("store_true", "store_false", "store_const", "count", "help", "version")


def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _action_arity(node) -> tuple[str, bool]:
    """(arity, also adds --no-x) of an argparse `action=`."""
    text = ast.unparse(node)
    if "BooleanOptionalAction" in text:
        return "none", True
    value = _literal(node)
    if value in _SWITCH_ACTIONS or "StoreTrue" in text or "StoreFalse" in text:
        return "none", False
    if value in ("store", "append", "extend"):
        return "one", False
    return "unknown", False


def _nargs_arity(value) -> str:
    if value in ("+", "*") or isinstance(value, int) and value > 1:
        return "many"
    return "optional" if value == "?" else "one"


def _type_facts(annotation: ast.AST) -> tuple[str, list | None]:
    """(arity, choices) that upstream derives from a field's type: bool is a switch, Literal gives choices."""
    node = annotation
    while isinstance(node, ast.Subscript) and ast.unparse(node.value) in ("Optional", "typing.Optional"):
        node = node.slice
    if isinstance(node, ast.BinOp):  # X | None
        parts = [p for p in (node.left, node.right) if ast.unparse(p) != "None"]
        node = parts[0] if len(parts) == 1 else node
    head = ast.unparse(node.value) if isinstance(node, ast.Subscript) else ast.unparse(node)
    if head == "bool":
        return "none", None
    if head in ("Literal", "typing.Literal"):
        values = _literal(node.slice)
        return "one", list(values) if isinstance(values, tuple) else [values]
    if head in ("List", "list", "typing.List"):
        return "many", None
    return "one", None


def _option(dest: str, arity: str, choices, origin: str) -> dict:
    return {"dest": dest, "arity": arity, "choices": choices, "origin": origin}


def _field_options(stmt: ast.AnnAssign, origin: str) -> dict[str, dict]:
    """Options of one `name: A[type, ...]` field; none when upstream skips it (no help/Arg, or no_cli)."""
    ann = stmt.annotation
    if not (isinstance(ann, ast.Subscript) and ast.unparse(ann.value) in ("A", "Annotated")
            and isinstance(ann.slice, ast.Tuple) and len(ann.slice.elts) >= 2):
        return {}
    type_node, *meta = ann.slice.elts
    arg = next((m for m in meta if isinstance(m, ast.Call) and ast.unparse(m.func) == "Arg"), None)
    has_help = any(isinstance(m, ast.Constant) and isinstance(m.value, str) for m in meta)
    if arg is None and not has_help:
        return {}
    name = stmt.target.id
    kw = {k.arg: k.value for k in arg.keywords if k.arg} if arg is not None else {}
    if _literal(kw.get("no_cli")) is True:
        return {}
    arity, choices = _type_facts(type_node)
    negated = False
    if "action" in kw:
        arity, negated = _action_arity(kw["action"])
    elif "nargs" in kw:
        arity = _nargs_arity(_literal(kw["nargs"]))
    if isinstance(_literal(kw.get("choices")), (list, tuple)):
        choices = list(_literal(kw["choices"]))
    cli = _literal(kw.get("cli_name")) or "--" + name.replace("_", "-")
    names = [cli] + list(_literal(kw.get("aliases")) or [])
    if negated:
        names += ["--no-" + n[2:] for n in names if n.startswith("--")]
    return {n: _option(name, arity, choices, origin) for n in names}


def _add_argument_options(call: ast.Call, origin: str) -> dict[str, dict]:
    names = []
    for a in call.args:
        value = _literal(a)
        if isinstance(value, str) and value.startswith("-"):
            names.append(value)
    if not names:
        return {}
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    arity, negated = ("one", False)
    if "action" in kw:
        arity, negated = _action_arity(kw["action"])
    elif "nargs" in kw:
        arity = _nargs_arity(_literal(kw["nargs"]))
    choices = _literal(kw["choices"]) if "choices" in kw else None
    choices = list(choices) if isinstance(choices, (list, tuple, set)) else None
    dest = _literal(kw.get("dest")) or names[0].lstrip("-").replace("-", "_")
    if negated:
        names += ["--no-" + n[2:] for n in names if n.startswith("--")]
    return {n: _option(dest, arity, choices, origin) for n in names}


def options(sources: dict[str, str]) -> dict[str, dict]:
    """Every option string declared in these files (annotated fields and add_argument calls)."""
    out: dict[str, dict] = {}
    for path, source in sorted(sources.items()):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        out.update(_field_options(stmt, path))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                out.update(_add_argument_options(node, path))
    return dict(sorted(out.items()))


def fields(sources: dict[str, str]) -> list[str]:
    """Names of every annotated server-argument field (what `Engine(**kwargs)` accepts)."""
    out = set()
    for source in sources.values():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(s, ast.AnnAssign) and isinstance(s.annotation, ast.Subscript)
                    and ast.unparse(s.annotation.value) in ("A", "Annotated") for s in node.body):
                out |= {s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                        and isinstance(s.target, ast.Name) and not s.target.id.startswith("_")}
    return sorted(out)


def resolve(flag: str, table: dict[str, dict], abbrev: bool = True) -> tuple[str | None, str]:
    """The option argparse would match for `flag` (exact, else a unique prefix); (None, why) otherwise.

    abbrev=False for click/typer, which take no abbreviations.
    """
    if flag in table:
        return flag, ""
    if not abbrev:
        return None, "unrecognized"
    matches = sorted(o for o in table if o.startswith(flag) and o.startswith("--"))
    if len(matches) == 1:
        return matches[0], ""
    if matches:
        return None, f"ambiguous: it abbreviates {', '.join(matches[:4])}"
    return None, "unrecognized"


def check_argv(argv: list[str], table: dict[str, dict], abbrev: bool = True) -> list[tuple[str, str]]:
    """(flag, problem) for each option in argv that the table refuses: unknown, ambiguous, bad choice, missing value."""
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("--"):
            continue
        flag, _, inline = word.partition("=")
        option, why = resolve(flag, table, abbrev)
        if option is None:
            out.append((flag, why))
            continue
        facts = table[option]
        arity, choices = facts["arity"], facts.get("choices")
        values = [inline] if inline else []
        if not inline and arity in ("one", "many"):
            while i < len(argv) and not argv[i].startswith("--"):
                values.append(argv[i])
                i += 1
                if arity == "one":
                    break
            if not values:
                out.append((flag, "expects a value"))
        elif arity == "none" and inline:
            out.append((flag, "is a switch and takes no value"))
        if choices and any(str(v) not in {str(c) for c in choices} for v in values):
            out.append((flag, f"value {values[0]!r} is not one of {choices}"))
    return out


# ------------------------------------------------------------------------------ typer


def _typer_option(arg: ast.arg, default) -> dict[str, dict] | None:
    """Options of one `serve` parameter: `Annotated[T, typer.Option(*names)]` or `T = typer.Option(default, *names)`."""
    ann, call = arg.annotation, None
    if isinstance(ann, ast.Subscript) and ast.unparse(ann.value).endswith("Annotated") and isinstance(ann.slice, ast.Tuple):
        type_node = ann.slice.elts[0]
        call = next((m for m in ann.slice.elts[1:] if isinstance(m, ast.Call) and ast.unparse(m.func).endswith("Option")), None)
        if call is None:
            if any(isinstance(m, ast.Call) and ast.unparse(m.func).endswith("Argument") for m in ann.slice.elts[1:]):
                return None
        decls = [a for a in call.args if isinstance(_literal(a), str)] if call is not None else []
    elif isinstance(default, ast.Call) and ast.unparse(default.func).endswith(("Option", "Argument")):
        if ast.unparse(default.func).endswith("Argument"):
            return None
        type_node, call = ann, default
        decls = [a for a in call.args[1:] if isinstance(_literal(a), str)]
    else:
        type_node, decls = ann, []  # a plain parameter: typer makes it an option of its own name
    if type_node is None:
        return None
    arity, choices = _type_facts(type_node)
    names: list[str] = []
    for decl in decls:
        names += [n for n in _literal(decl).split("/") if n.startswith("-")]
    if arity == "many":
        arity = "one"  # a typer list option takes one value per occurrence, repeated
    if not names:  # typer's own spelling: --name-with-dashes, and --no-name for a bool
        names = ["--" + arg.arg.replace("_", "-")]
        if arity == "none":
            names.append("--no-" + arg.arg.replace("_", "-"))
    kw = {k.arg: k.value for k in call.keywords if k.arg} if call is not None else {}
    if isinstance(_literal(kw.get("is_flag")), bool):
        arity = "none" if _literal(kw["is_flag"]) else "one"
    return {n: _option(arg.arg, arity, choices, "") for n in names}


def typer_options(source: str | None, function: str, origin: str) -> dict[str, dict]:
    """Every option string of the typer command `function` (its parameters, ctx excluded)."""
    try:
        tree = ast.parse(source or "")
    except SyntaxError:
        return {}
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function),
                None)
    if node is None:
        return {}
    a = node.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out: dict[str, dict] = {}
    for arg, default in list(zip(positional, defaults)) + list(zip(a.kwonlyargs, a.kw_defaults)):
        if arg.arg == "ctx" or (arg.annotation is not None and ast.unparse(arg.annotation).endswith("Context")):
            continue
        for name, facts in (_typer_option(arg, default) or {}).items():
            out[name] = dict(facts, origin=origin)
    return dict(sorted(out.items()))


def typer_command(source: str | None, name: str) -> dict | None:
    """How `app.command(name, context_settings=...)` registers a command: {"extra_args": bool} (None when absent)."""
    try:
        tree = ast.parse(source or "")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "command"
                and node.args and _literal(node.args[0]) == name):
            settings = next((k.value for k in node.keywords if k.arg == "context_settings"), None)
            settings = _literal(settings) if settings is not None else {}
            settings = settings if isinstance(settings, dict) else {}
            return {"extra_args": bool(settings.get("allow_extra_args") and settings.get("ignore_unknown_options"))}
    return None


# ---------------------------------------------------------------- dotted stage overrides


def _value(text: str):
    """A flag's text as upstream's coercion reads it: JSON where it parses (1, 0.5, [0,1], true), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def check_stage_override(flag: str, value: str | None, facts: dict) -> str | None:
    """Why `--<stage>.<field>... value` is refused by the pipeline config's stage schema, or None.

    facts: {"stages": {name: [stage classes]}, "top_fields": [...], "schema": models() facts of
    config/schema.py}. The first segment's dashes read as underscores, as upstream normalises it.
    """
    from .upstream_types import Schema

    head, _, rest = flag[2:].partition(".")
    head = head.replace("-", "_")
    if value is None:
        return "expects a value"
    stages = facts.get("stages", {})
    if head not in stages:
        if head in facts.get("top_fields", []) and not rest:
            return None
        return (f"does not start from a stage name of the Qwen3-Omni pipeline configs "
                f"(stages: {', '.join(sorted(stages))})")
    if not rest:
        return "names a whole stage; write one field below it"
    schema, reasons = Schema(facts.get("schema", {})), []
    for cls in stages[head]:
        if rest.split(".")[0] == "engine" and cls not in facts.get("engine_stages", [cls]):
            reasons.append(f"engine.* exists only on engine stages ({', '.join(facts['engine_stages'])}); "
                           f"{head} is a {cls}")
            continue
        why = _walk(schema, cls, rest.split("."), _value(value), f"{head}.{rest}")
        if why is None:
            return None
        reasons.append(why)
    return reasons[0]


def _walk(schema, cls: str, parts: list[str], value, where: str) -> str | None:
    if cls not in schema.classes:
        return None  # a class the facts do not hold: not judged
    fields, closed = schema.fields(cls)
    field = fields.get(parts[0])
    if field is None:
        extra = schema.classes[cls].get("extra")
        if extra == "allow" or not closed:
            return None
        return f"{parts[0]!r} is not a field of {cls} (known: {', '.join(sorted(fields)[:12])}, ...)"
    if len(parts) == 1:
        problems = [p for p in schema.check(value, field["type"], where) if not p.unknown]
        return f"value {value!r}: {problems[0].message}" if problems else None
    for name in _class_names(field["type"]):
        if name in schema.classes:
            return _walk(schema, name, parts[1:], value, where)
    if field["type"].replace(" ", "").startswith(("dict", "Dict")):
        return None  # a free-form mapping: any key
    return f"{parts[0]!r} of {cls} is a {field['type']} value, not a settings group"


def _class_names(text: str) -> list[str]:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return []
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]


def check_typer_argv(argv: list[str], table: dict[str, dict], overrides: dict | None,
                     extra_args: bool) -> list[tuple[str, str]]:
    """(flag, problem) for a typer command line: its options by `check_argv`, the rest as dotted stage overrides.

    With `overrides` (0.1.4 on) a word typer does not know must be a stage override the config
    schema takes; without them (the pin) it is unrecognized, whatever the config merge makes of it.
    """
    out, i, known = [], 0, []
    while i < len(argv):
        word = argv[i]
        i += 1
        flag = word.partition("=")[0]
        if not word.startswith("--") or flag in table:
            known.append(word)
            continue
        if overrides is not None and extra_args and "." in flag:
            value = word.partition("=")[2] or None
            if value is None and i < len(argv) and not argv[i].startswith("--"):
                value, i = argv[i], i + 1
            if why := check_stage_override(flag, value, overrides):
                out.append((flag, f"is not a stage override the pipeline config takes: {why}"))
            continue
        out.append((flag, "unrecognized"))
        while i < len(argv) and not argv[i].startswith("--"):
            i += 1  # its value, if any
    return out + check_argv(known, table, abbrev=False)

"""Upstream command-line arguments, read by AST, and a check of a launch command against them.

sglang declares its server arguments as annotated fields (`name: A[type, "help"]` or
`A[type, Arg(aliases=..., choices=..., action=...)]`, each `--name-with-dashes`) plus a few
explicit `parser.add_argument(...)` calls; launcher scripts use plain `add_argument`. Each
option becomes {"dest", "arity", "choices"}: arity "none" (a switch), "one", "many",
"optional" or "unknown" (a custom action we cannot judge).
"""

from __future__ import annotations

import ast

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


def resolve(flag: str, table: dict[str, dict]) -> tuple[str | None, str]:
    """The option argparse would match for `flag` (exact, else a unique prefix); (None, why) otherwise."""
    if flag in table:
        return flag, ""
    matches = sorted(o for o in table if o.startswith(flag) and o.startswith("--"))
    if len(matches) == 1:
        return matches[0], ""
    if matches:
        return None, f"ambiguous: it abbreviates {', '.join(matches[:4])}"
    return None, "unrecognized"


def check_argv(argv: list[str], table: dict[str, dict]) -> list[tuple[str, str]]:
    """(flag, problem) for each option in argv that the table refuses: unknown, ambiguous, bad choice, missing value."""
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("--"):
            continue
        flag, _, inline = word.partition("=")
        option, why = resolve(flag, table)
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

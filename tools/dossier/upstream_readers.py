"""AST readers of upstream's handlers, tables and refusals (nothing upstream runs).

Low-level pieces the contract facts are built from (dossier.upstream_facts): form-handler
parameters, module-level tables and constants, function parameters, and `if ...: raise`
refusals of a request.
"""

from __future__ import annotations

import ast
import hashlib


def parse_source(source: str | None) -> ast.Module | None:
    try:
        return ast.parse(source) if source else None
    except SyntaxError:
        return None


def literal(node):
    """A literal's value (str, number, bool, None, list/tuple of those); KeyError when not literal."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise KeyError("not a literal") from None


def call_name(node) -> str:
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def keyword_args(call: ast.Call) -> dict[str, ast.AST]:
    return {k.arg: k.value for k in call.keywords if k.arg}


# ------------------------------------------------------------------ handlers and tables


def _allowed_values(body: list[ast.stmt]) -> dict[str, list]:
    """`if name not in [..literals..]` (a refusal) -> the values `name` may take."""
    out = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
                and isinstance(node.test.ops[0], ast.NotIn) and isinstance(node.test.left, ast.Name)):
            try:
                values = literal(node.test.comparators[0])
            except KeyError:
                continue
            if isinstance(values, (list, tuple, set, frozenset)):
                out[node.test.left.id] = sorted(values, key=str)
    return out


def form_routes(source: str | None, routes) -> dict:
    """Per route: each Form/File parameter (wire name, annotation, required) and allowed values."""
    tree, out = parse_source(source), {}
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
            if not (isinstance(default, ast.Call) and call_name(default) in ("Form", "File")):
                continue
            kw = keyword_args(default)
            alias = kw.get("alias")
            first = default.args[0] if default.args else kw.get("default")
            required = first is None or (isinstance(first, ast.Constant) and first.value is Ellipsis)
            name = alias.value if isinstance(alias, ast.Constant) else arg.arg
            fields[name] = {"type": ast.unparse(arg.annotation) if arg.annotation else "Any",
                            "required": required, "file": call_name(default) == "File", "param": arg.arg}
        out[route] = {"fields": fields, "allowed": _allowed_values(node.body)}
    return out


def dict_table(source: str | None, name: str) -> dict[str, str]:
    """A module-level `NAME = {"literal": ClassName, ...}` table, as {key: class name}."""
    for stmt in (parse_source(source) or ast.Module(body=[], type_ignores=[])).body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
            (stmt.target if isinstance(stmt, ast.AnnAssign) else None)
        if isinstance(target, ast.Name) and target.id == name and isinstance(stmt.value, ast.Dict):
            return {k.value: ast.unparse(v) for k, v in zip(stmt.value.keys, stmt.value.values)
                    if isinstance(k, ast.Constant)}
    return {}


def function_params(source: str | None, qualname: str) -> dict[str, dict]:
    """Parameters of `Class.method` or `function` (self dropped): annotation text and required."""
    cls, _, fn = qualname.rpartition(".")
    tree = parse_source(source)
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
    for fn in ast.walk(parse_source(source) or ast.Module(body=[], type_ignores=[])):
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
    for stmt in (parse_source(source) or ast.Module(body=[], type_ignores=[])).body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == name):
            value = stmt.value
            if isinstance(value, ast.Call) and call_name(value) in ("frozenset", "set") and value.args:
                value = value.args[0]
            try:
                return sorted(literal(value), key=str)
            except (KeyError, TypeError):
                return None
    return None


def digest(source: str | None) -> str | None:
    return hashlib.sha256(source.encode()).hexdigest() if source is not None else None

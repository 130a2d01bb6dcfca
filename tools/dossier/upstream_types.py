"""Check a JSON value against upstream request-model facts (field names and annotation text).

Used for the upstream commits we have no installable copy of (the pinned sglang and
sglang-omni), from references/trees/<repo>.contract.json. It follows pydantic's reading of
the annotations for JSON values: Optional/Union/List/Dict/Literal/Annotated, `X | None`,
nested models and module-level aliases. A name it cannot resolve (a class from another
module) is accepted: the facts cannot judge it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

_SCALARS = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool), "StrictBool": lambda v: isinstance(v, bool),
    "bytes": lambda v: isinstance(v, (str, bytes)),
    "dict": lambda v: isinstance(v, dict), "Dict": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list), "List": lambda v: isinstance(v, list),
    "None": lambda v: v is None, "NoneType": lambda v: v is None,
}
_ANY = {"Any", "object", "typing.Any"}
_SEQUENCES = {"List", "list", "Sequence", "Set", "set", "Tuple", "tuple", "Iterable"}


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    unknown: bool = False  # an unknown key: upstream ignores it (unless the model forbids extras)

    def __str__(self) -> str:
        return f"{self.path or '(body)'}: {self.message}"


def _kind(value) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__)


def _join(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


class Schema:
    """The classes and aliases of one contract file (upstream_facts.models output)."""

    def __init__(self, facts: dict):
        self.classes = facts.get("classes", {})
        self.aliases = facts.get("aliases", {})

    # -- models
    def fields(self, name: str) -> tuple[dict, bool]:
        """(fields including inherited ones, whether every base is known)."""
        facts = self.classes[name]
        out, closed = {}, True
        for base in facts["bases"]:
            if base in self.classes:
                inherited, base_closed = self.fields(base)
                out.update(inherited)
                closed &= base_closed
            elif base not in ("BaseModel", "object", "Generic"):
                closed = False  # e.g. an openai type: its fields are not in the facts
        out.update(facts["fields"])
        return out, closed

    def check_model(self, value, name: str, path: str = "") -> list[Problem]:
        if not isinstance(value, dict):
            return [Problem(path, f"expected an object ({name}), got {_kind(value)}")]
        fields, closed = self.fields(name)
        facts = self.classes[name]
        names = {}
        for field, f in fields.items():
            names[field] = field
            for alias in f.get("aliases", []):
                names[alias] = field
        out = []
        for key, item in value.items():
            if key not in names:
                if closed:
                    forbid = facts.get("extra") == "forbid"
                    out.append(Problem(_join(path, key), f"unknown key of {name}" + (" (extra keys forbidden)" if forbid
                                       else " (upstream ignores it)"), unknown=not forbid))
                continue
            out += self.check(item, fields[names[key]]["type"], _join(path, key))
        for field, f in fields.items():
            if f.get("required") and field not in value and not any(a in value for a in f.get("aliases", [])):
                out.append(Problem(_join(path, field), f"required by {name}, missing"))
        return out

    # -- annotations
    def check(self, value, text: str, path: str = "") -> list[Problem]:
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError:
            return []
        return self._node(value, node, path)

    def _node(self, value, node, path) -> list[Problem]:
        if isinstance(node, ast.Constant):
            if node.value is None:
                return [] if value is None else [Problem(path, f"expected null, got {_kind(value)}")]
            return self.check(value, node.value, path) if isinstance(node.value, str) else []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self._union(value, [node.left, node.right], path, ast.unparse(node))
        if isinstance(node, ast.Subscript):
            return self._subscript(value, node, path)
        return self._named(value, ast.unparse(node), path)

    def _named(self, value, name: str, path) -> list[Problem]:
        name = name.removeprefix("typing.")
        if name in _ANY:
            return []
        if name in _SCALARS:
            return [] if _SCALARS[name](value) else [Problem(path, f"expected {name}, got {_kind(value)}")]
        if name in self.classes:
            return self.check_model(value, name, path)
        if name in self.aliases:
            return self.check(value, self.aliases[name], path)
        return []  # a type from elsewhere: not judged

    def _subscript(self, value, node, path) -> list[Problem]:
        head = ast.unparse(node.value).removeprefix("typing.").removeprefix("typing_extensions.")
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Optional":
            return [] if value is None else self._node(value, args[0], path)
        if head == "Union":
            return self._union(value, args, path, ast.unparse(node))
        if head == "Annotated":
            return self._node(value, args[0], path)
        if head == "Literal":
            allowed = [a.value for a in args if isinstance(a, ast.Constant)]
            return [] if value in allowed else [Problem(path, f"expected one of {allowed}, got {value!r}")]
        if head in _SEQUENCES:
            if not isinstance(value, (list, tuple)):
                return [Problem(path, f"expected {ast.unparse(node)} (an array), got {_kind(value)}")]
            items = [a for a in args if not (isinstance(a, ast.Constant) and a.value is Ellipsis)]
            item = items[0] if len(items) == 1 else None
            out = []
            for i, v in enumerate(value):
                if item is not None:
                    out += self._node(v, item, _join(path, i))
                elif i < len(items):
                    out += self._node(v, items[i], _join(path, i))
            return out
        if head in ("Dict", "dict", "Mapping"):
            if not isinstance(value, dict):
                return [Problem(path, f"expected {ast.unparse(node)} (an object), got {_kind(value)}")]
            return [p for k, v in value.items() for p in self._node(v, args[-1], _join(path, k))] if len(args) == 2 else []
        return self._named(value, head, path)

    def _union(self, value, members, path, text) -> list[Problem]:
        results = [self._node(value, m, path) for m in members]
        fitting = [r for r in results if not any(not p.unknown for p in r)]
        if fitting:
            return min(fitting, key=len)  # the member that fits, with its unknown keys (if any)
        tag = _join(path, "type")
        deeper = [r for r in results if all(p.path != path for p in r) and not any(p.path == tag for p in r)]
        if deeper:  # a member whose `type` tag fits failed inside: its reasons are the useful ones
            return min(deeper, key=len)
        got = f"{_kind(value)} of type {value['type']!r}" if isinstance(value, dict) and "type" in value else _kind(value)
        return [Problem(path, f"expected {text}, got {got}")]


def form_value_problems(value: str, text: str) -> str | None:
    """Whether a multipart form string converts to the annotated type the way FastAPI's Form does."""
    node = ast.parse(text, mode="eval").body
    names = {ast.unparse(n) for n in ast.walk(node)} - {"Optional", "List", "Union", "None"}
    for name in ("bool", "float", "int"):
        if name in names and name == ast.unparse(node).removeprefix("Optional[").rstrip("]"):
            if name == "bool" and value.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                return f"{value!r} is not a boolean"
            if name in ("float", "int"):
                try:
                    (float if name == "float" else int)(value)
                except ValueError:
                    return f"{value!r} is not {'a number' if name == 'float' else 'an integer'}"
    return None

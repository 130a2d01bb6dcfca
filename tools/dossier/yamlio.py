"""The one YAML reader: safe, libyaml-fast, line-aware, one error format.

Every mapping comes back as a `LinedMap` and every list as a `LinedList`: plain
dict and list subclasses that also carry the 1-based lines their keys and items
sit on, so a rule can point at the line of a bad value without re-parsing.

Strict where PyYAML is lenient: a duplicate key is an error naming both lines (not
"the last one wins"), anchors and aliases are refused (an alias bomb of a few
hundred bytes expands to gigabytes), and a document over MAX_YAML_BYTES is refused.

A document of one-line `key: value` entries (a card's frontmatter) is built directly,
to the same values, lines and spans (`_load_simple`); anything else goes through libyaml
and PyYAML's constructor.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

from .errors import DossierError
from .fsio import read_text


class YamlError(DossierError):
    """Invalid YAML, with the 1-based line and column of the problem."""

    def __init__(self, source: str, line: int, col: int, problem: str):
        super().__init__(f"{source}:{line}:{col}: invalid YAML: {problem}")
        self.source, self.line, self.col, self.problem = source, line, col, problem


class LinedMap(dict):
    """A mapping that knows its own line, each key's line and each list item's line.

    `spans` gives, per key, the value's (start, end) character offsets in the parsed
    text and the key's column, so an editor can rewrite one value in place.
    """

    line: int = 1
    key_lines: dict
    item_lines: dict
    spans: dict


class LinedList(list):
    line: int = 1
    item_lines: list


_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it: ~5x faster


MAX_YAML_BYTES = 4 * 1024 * 1024  # the largest hand-written YAML file is ~16 KB


class _LinedLoader(_BaseLoader):
    first_line = 1  # set per call through a subclass, so frontmatter lines count from the file's top

    def construct_object(self, node, deep=False):
        # In a tree every node is built once; a node seen again was reached through an alias.
        if node in self.constructed_objects or node in self.recursive_objects:
            raise yaml.constructor.ConstructorError(
                None, None, "anchors and aliases are not allowed (write the value out)", node.start_mark)
        return super().construct_object(node, deep=deep)


def _map(loader, node):
    out = LinedMap()
    out.line = node.start_mark.line + loader.first_line
    out.key_lines, out.item_lines, out.spans = {}, {}, {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, (list, dict)) and key in out.key_lines:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {out.key_lines[key]})", key_node.start_mark)
        try:
            out[key] = loader.construct_object(value_node, deep=True)
        except TypeError:  # an unhashable key (a list or a mapping): report like PyYAML does
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark
            ) from None
        out.key_lines[key] = key_node.start_mark.line + loader.first_line
        out.spans[key] = (value_node.start_mark.index, value_node.end_mark.index, key_node.start_mark.column)
        if isinstance(value_node, yaml.SequenceNode):
            out.item_lines[key] = [child.start_mark.line + loader.first_line for child in value_node.value]
    return out


def _seq(loader, node):
    out = LinedList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + loader.first_line
    out.item_lines = [child.start_mark.line + loader.first_line for child in node.value]
    return out


_LinedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _map)
_LinedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _seq)


def _merge(loader, node):
    raise yaml.constructor.ConstructorError(None, None, "merge keys (<<) are not allowed (write the keys out)",
                                            node.start_mark)


_LinedLoader.add_constructor("tag:yaml.org,2002:merge", _merge)


def _first_alias(text: str):
    """Mark of the first alias in text (to point at it, not at its anchor), or None."""
    try:
        for event in yaml.parse(text, Loader=_BaseLoader):
            if isinstance(event, yaml.AliasEvent):
                return event.start_mark
    except yaml.YAMLError:
        pass
    return None


# --- The fast path: a document of one-line `key: value` entries -------------------------
# A card's frontmatter is a dozen lines like `pr: 1285`, `title: "..."`, `lanes: [a, b]`,
# `stats: {files: 6, additions: 461}`. libyaml parses them quickly, but PyYAML's Python
# constructor then costs ~250 us a card (1/6 s at 700 cards). `_load_simple` reads exactly
# that shape itself and answers None for anything else (comments, blank or continued lines,
# block lists, escapes other than \" \\ \uXXXX, any odd character, a construction error),
# which then takes the full path, so every error and every other document stays libyaml's.

_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()  # the resolver CSafeLoader and SafeLoader use
_CONSTRUCTOR = yaml.constructor.SafeConstructor()  # `self` for the scalar constructors, which keep no state
_KEY = r"[A-Za-z_][A-Za-z0-9_-]*"  # no longer than its line, at most 1024: libyaml's cap on a key
_SIMPLE_ENTRY = re.compile(rf"({_KEY}): +(\S.*)")
# A plain scalar that cannot be read as anything but one in block context: no indicator
# first, no `: ` or ` #` inside, no `:` last (checked in _simple_value).
_PLAIN_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~")
# [a, b] and {k: v, ...} of plain scalars without flow indicators, `:`, `#` or spaces.
_ITEM = r"[A-Za-z0-9_~][A-Za-z0-9_.+/-]*"
_FLOW_SEQ = re.compile(rf"\[ *(?:{_ITEM} *(?:, *{_ITEM} *)*)?\]")
_FLOW_MAP = re.compile(rf"\{{ *(?:{_KEY}: +{_ITEM} *(?:, *{_KEY}: +{_ITEM} *)*)?\}}")
_FLOW_PAIR = re.compile(rf"({_KEY}): +({_ITEM})")  # each pair of a _FLOW_MAP, in order
_DOUBLE_QUOTED = re.compile(r'"([^"\\]*(?:\\(?:["\\]|u[0-9a-fA-F]{4})[^"\\]*)*)"')
_ESCAPE = re.compile(r'\\(["\\]|u[0-9a-fA-F]{4})')


@lru_cache(maxsize=4096)  # frontmatter values repeat across cards: `merged`, `perf`, `read`
def _plain(value: str):
    """A plain scalar built as the SafeLoader builds it: its implicit tag, that tag's constructor."""
    tag = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))
    if tag == _STR_TAG:
        return value
    return _LinedLoader.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, value))


def _unescape(match: re.Match) -> str:
    code = match.group(1)
    return code if len(code) == 1 else chr(int(code[1:], 16))


def _simple_value(text: str, start: int, column: int, line: int):
    """(value, is a list) of an entry's value `text`, which sits at offset `start`, `column`; or None."""
    first = text[0]
    if first == '"':
        m = _DOUBLE_QUOTED.fullmatch(text)
        if m is None:
            return None
        if "\\" not in text:
            return m.group(1), False
        value = _ESCAPE.sub(_unescape, m.group(1))
        # A surrogate (libyaml refuses it) or a control character or line break: not printable.
        return (value, False) if value.isprintable() else None
    if first == "'":
        inner = text[1:-1]
        return (inner, False) if len(text) > 1 and text[-1] == "'" and "'" not in inner else None
    if first == "[":
        if not _FLOW_SEQ.fullmatch(text):
            return None
        inner = text[1:-1]
        out = LinedList([_plain(item.strip(" ")) for item in inner.split(",")] if inner.strip(" ") else [])
        out.line, out.item_lines = line, [line] * len(out)
        return out, True
    if first == "{":
        if not _FLOW_MAP.fullmatch(text):
            return None
        out = _new_map(line)
        for m in _FLOW_PAIR.finditer(text):
            key = _plain(m.group(1))
            if type(key) is not str or key in out.key_lines:
                return None
            out[key] = _plain(m.group(2))
            out.key_lines[key] = line
            out.spans[key] = (start + m.start(2), start + m.end(2), column + m.start(1))
        return out, False
    if first not in _PLAIN_FIRST or ": " in text or " #" in text or text[-1] == ":":
        return None
    return _plain(text), False


def _new_map(line: int) -> LinedMap:
    out = LinedMap()
    out.line, out.key_lines, out.item_lines, out.spans = line, {}, {}, {}
    return out


def _load_simple(text: str, first_line: int) -> LinedMap | None:
    """The document `yaml.load` with _LinedLoader builds, when every line is one simple entry; else None."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # a file's last newline
    out = _new_map(first_line)
    offset = 0  # of the line in text
    try:
        for number, line in enumerate(lines, first_line):
            m = _SIMPLE_ENTRY.fullmatch(line)
            # isprintable: no tab, CR, BOM or control character, all of which libyaml treats its own way.
            if m is None or line[-1] == " " or len(line) > 1024 or not line.isprintable():
                return None
            key = _plain(m.group(1))
            if type(key) is not str or key in out.key_lines:
                return None
            start = offset + m.start(2)
            value = _simple_value(m.group(2), start, m.start(2), number)
            if value is None:
                return None
            out[key] = value[0]
            out.key_lines[key] = number
            out.spans[key] = (start, offset + len(line), 0)
            if value[1]:
                out.item_lines[key] = [number] * len(value[0])
            offset += len(line) + 1
    except Exception:  # noqa: BLE001 - a value its constructor refuses (a bad date): the full path reports it
        return None
    return out


_LOADERS: dict[int, type] = {1: _LinedLoader}
# Dumping what was read (`dossier lanes show`, site pages) must not need a plain-dict copy first.
yaml.SafeDumper.add_representer(LinedMap, yaml.representer.SafeRepresenter.represent_dict)
yaml.SafeDumper.add_representer(LinedList, yaml.representer.SafeRepresenter.represent_list)


def _loader(first_line: int) -> type:
    """The full path's loader class for documents that start on file line `first_line`."""
    loader = _LOADERS.get(first_line)
    if loader is None:
        loader = _LOADERS[first_line] = type("_LinedLoaderAt", (_LinedLoader,), {"first_line": first_line})
    return loader


def parse_yaml(text: str, source: str = "<yaml>", first_line: int = 1):
    """Parse one YAML document; `first_line` is the file line the text starts on."""
    if len(text) > MAX_YAML_BYTES:
        raise YamlError(source, first_line, 1, f"{len(text):,} characters; the cap is {MAX_YAML_BYTES:,}")
    built = _load_simple(text, first_line)
    if built is not None:
        return built
    try:
        return yaml.load(text, Loader=_loader(first_line))  # noqa: S506 - a SafeLoader subclass
    except yaml.reader.ReaderError as exc:  # a NUL or other control character: it has an offset, not a mark
        before = text[: exc.position]
        line, col = before.count("\n") + first_line, exc.position - (before.rfind("\n") + 1) + 1
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        raise YamlError(source, line, col, f"unacceptable character {char}: {exc.reason}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = str(getattr(exc, "problem", None) or exc).split("\n")[0]
        if problem.startswith("anchors and aliases"):
            mark = _first_alias(text) or mark
        line = mark.line + first_line if mark else first_line
        col = mark.column + 1 if mark else 1
        raise YamlError(source, line, col, problem) from None


def read_yaml(path: Path, source: str | None = None, root: Path | None = None):
    """Read and parse a YAML file; a missing, non-UTF-8, symlinked or invalid file raises one DossierError line."""
    return parse_yaml(read_text(path, root), source or str(path))


def line_of(node, key=None, index: int | None = None) -> int:
    """Line of node[key] (or of its index-th list item); the node's own line as a fallback."""
    if isinstance(node, LinedList):
        if index is not None and index < len(node.item_lines):
            return node.item_lines[index]
        return node.line
    if not isinstance(node, LinedMap):
        return 1
    if index is not None:
        items = node.item_lines.get(key) or []
        if index < len(items):
            return items[index]
    return node.key_lines.get(key, node.line)

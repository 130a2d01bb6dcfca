"""The one YAML reader: safe, libyaml-fast, line-aware, one error format.

Every mapping comes back as a `LinedMap` and every list as a `LinedList`: plain
dict and list subclasses that also carry the 1-based lines their keys and items
sit on, so a rule can point at the line of a bad value without re-parsing.

Strict where PyYAML is lenient: a duplicate key is an error naming both lines (not
"the last one wins"), anchors and aliases are refused (an alias bomb of a few
hundred bytes expands to gigabytes), and a document over MAX_YAML_BYTES is refused.
"""

from __future__ import annotations

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
_LOADERS: dict[int, type] = {1: _LinedLoader}
# Dumping what was read (`dossier lanes show`, site pages) must not need a plain-dict copy first.
yaml.SafeDumper.add_representer(LinedMap, yaml.representer.SafeRepresenter.represent_dict)
yaml.SafeDumper.add_representer(LinedList, yaml.representer.SafeRepresenter.represent_list)


def parse_yaml(text: str, source: str = "<yaml>", first_line: int = 1):
    """Parse one YAML document; `first_line` is the file line the text starts on."""
    if len(text) > MAX_YAML_BYTES:
        raise YamlError(source, first_line, 1, f"{len(text):,} characters; the cap is {MAX_YAML_BYTES:,}")
    loader = _LOADERS.get(first_line)
    if loader is None:
        loader = _LOADERS[first_line] = type("_LinedLoaderAt", (_LinedLoader,), {"first_line": first_line})
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
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

"""yamlio's fast path for one-line `key: value` documents must build what the full libyaml path builds.

Every case runs both: `_load_simple` (None when it is not sure) and `yaml.load` with the full
path's loader; where the fast path answers, values, types, lines, item lines and spans must
all be equal, and the cases marked "full" must be left to the full path.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from dossier import yamlio
from dossier.yamlio import LinedList, LinedMap, YamlError, parse_yaml

ROOT = Path(__file__).resolve().parents[1]


def full(text: str, first_line: int = 2):
    return yaml.load(text, Loader=yamlio._loader(first_line))  # noqa: S506 - a SafeLoader subclass


def same_tree(a, b, where="$"):
    """Assert a and b are equal down to types and every LinedMap / LinedList attribute."""
    assert type(a) is type(b), (where, a, b)
    if isinstance(a, LinedMap):
        assert (a.line, a.key_lines, a.item_lines, a.spans) == (b.line, b.key_lines, b.item_lines, b.spans), where
        assert list(a) == list(b), where
        for key in a:
            same_tree(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, LinedList):
        assert (a.line, a.item_lines, len(a)) == (b.line, b.item_lines, len(b)), where
        for i, (x, y) in enumerate(zip(a, b)):
            same_tree(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


FAST = [
    'repo: sglang-omni\npr: 1285\ntitle: "[ASR][M5] Extract serving"\nstate: merged\nmerged: 2026-08-07',
    "url: https://github.com/sgl-project/sglang/pull/1#issuecomment-2\nthread: none found (searched 2026-12-01)",
    "stats: {files: 6, additions: 461, deletions: 362}\nfamilies: [qwen3-asr, omni-runtime]\nsymptoms: []",
    "a: [x , y ]\nb: {p: 1 , q:  2 }\nc: {}\nd: [ ]\ne:   spaced value",
    # YAML 1.1 scalars: bools, nulls, ints in every base, floats, dates, times, and their look-alikes.
    "a: yes\nb: no\nc: On\nd: off\ne: ~\nf: null\ng: Null\nh: true\ni: y\nj: n\nk: nope",
    "a: 1e3\nb: 1.0e+3\nc: 0x1F\nd: 0o17\ne: 017\nf: 1_000\ng: 1:30\nh: 0.5\ni: 0b101\nj: 3.",
    "a: 2026-08-07\nb: 2001-12-14 21:59:43.10 -5\nc: 2001-12-14t21:59:43.10-05:00\nd: 20260807\ne: 2026-8-7",
    "a: [1, 2.5, yes, ~, 2026-01-02, 1e3, x/y, a+b]\nb: {n: 1, f: 1.5, t: true, z: ~, d: 2026-01-02}",
    'a: "123"\nb: \'yes\'\nc: "~"\nd: ""\ne: \'\'\nf: "a \\"b\\" \\\\ \\u00e9 \\u0026"\ng: \'it is "x"\'',
    "a: it's fine\nb: a \"b\" c\nc: a:b\nd: x, y [z] {w}\ne: 50% off!\nf: a\\b",
    'title: "é — ünïcode"\nb: héllo wörld\nc: [x, y]',
    "a: 1\n",  # a file's last newline
]

FULL = [
    "",
    "a: 1\n\nb: 2",  # a blank line
    "# a comment\na: 1",
    "a: 1 # a comment",
    "a: 1 ",  # trailing space
    "a:\n  - x\n  - y",  # a block list
    "a:",  # an empty value
    "a: |\n  text",
    "a: >\n  text",
    "a: x\n  continued",
    "a: 'it''s'",
    'a: "tab\\tescape"',
    'a: "\\u0085"',  # an escape that builds a line break
    'a: "\\ud800"',  # a surrogate
    "a: x\tb",
    "a: x\r",
    "a: [x, [y]]",
    "a: [x, {b: 1}]",
    "a: [x,]",
    "a: [x y]",
    "a: {b: c d}",
    "a: {b: 1, b: 2}",
    "a: &x 1\nb: *x",
    "a: !!str 1",
    "<<: {a: 1}",
    "on: 1",  # the key is a bool
    "null: 1",
    "a: 1\na: 2",  # duplicate keys
    "a: b: c",
    "a: b:",
    "a: -1",
    "a: - x",
    "a: 2026-02-30",  # a date the constructor refuses
    "- a\n- b",
    "plain text",
    "a: `x`",
    "a: @x",
    "a: %x",
    "a: ?x",
    "a: .5",
]


def test_fast_path_values_have_yaml_types():
    data = yamlio._load_simple("a: 2026-08-07\nb: 1e3\nc: 1.5\nd: yes\ne: ~\nf: 0x1F\ng: [1, no]", 1)
    assert data == {"a": datetime.date(2026, 8, 7), "b": "1e3", "c": 1.5, "d": True, "e": None, "f": 31, "g": [1, False]}


@pytest.mark.parametrize("text", FULL)
def test_anything_else_takes_the_full_path(text):
    assert yamlio._load_simple(text, 2) is None
    try:
        expected = full(text)
    except (yaml.YAMLError, ValueError) as exc:
        with pytest.raises((YamlError, ValueError)) as info:
            parse_yaml(text, "f.yaml", first_line=2)
        assert isinstance(info.value, YamlError) == isinstance(exc, yaml.YAMLError)
    else:
        if isinstance(expected, (LinedMap, LinedList)):
            same_tree(parse_yaml(text, "f.yaml", first_line=2), expected)
        else:
            assert parse_yaml(text, "f.yaml", first_line=2) == expected


def test_every_shipped_card_frontmatter_takes_the_fast_path_and_agrees():
    paths = sorted((ROOT / "references/cards").glob("*/*.md"))
    assert paths
    for path in paths:
        lines = path.read_text(encoding="utf-8").split("\n")
        raw = "\n".join(lines[1:lines.index("---", 1)])
        fast = yamlio._load_simple(raw, 2)
        assert fast is not None, path
        same_tree(fast, full(raw), str(path))


def test_a_key_past_libyamls_1024_character_cap_takes_the_full_path():
    text = "k" * 1100 + ": 1"
    assert yamlio._load_simple(text, 2) is None
    with pytest.raises(YamlError):
        parse_yaml(text, "f.yaml", first_line=2)


@pytest.mark.parametrize("text", FAST)
def test_fast_path_builds_what_libyaml_builds(text):
    fast = yamlio._load_simple(text, 2)
    assert fast is not None, "the fast path should take this document"
    same_tree(fast, full(text))
    same_tree(parse_yaml(text, "f.yaml", first_line=2), full(text))

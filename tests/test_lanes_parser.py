"""A lane parser built once and reused (_runner.reused_parser) parses as a freshly built one."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from lane_harness import BY_ID, lane_module  # noqa: E402


def _runner():
    lane_module("vl-video")  # imports the lanes' helpers
    return sys.modules["_runner"]


def _lane_class(lane_id: str) -> type:
    module = lane_module(lane_id)
    base = sys.modules["_lane"].Lane
    return next(v for v in vars(module).values()
                if isinstance(v, type) and issubclass(v, base) and v.__module__ == module.__name__)


def test_a_reused_parser_is_the_one_a_fresh_build_gives():
    runner = _runner()
    for lane_id, entry in BY_ID.items():
        cls = _lane_class(lane_id)
        reused = runner.reused_parser(cls())
        assert runner.reused_parser(cls()) is reused, lane_id  # built once: the fast path
        fresh = runner.build_parser(cls())
        assert reused.format_help() == fresh.format_help(), lane_id
        for argv in ([], [*map(str, entry.get("args", [])), "--dry-run"], ["--requests", "3", "--seed", "7"]):
            assert vars(reused.parse_args(argv)) == vars(fresh.parse_args(argv)), (lane_id, argv)
            assert vars(reused.parse_args(argv)) == vars(fresh.parse_args(argv)), (lane_id, argv)  # unchanged by a parse


def test_a_parser_is_built_afresh_when_what_it_reads_differs(monkeypatch):
    runner = _runner()
    cls = _lane_class("omni-speech")
    reused = runner.reused_parser(cls())
    # the environment (omni-speech's --omni-root default) and the program name are in the key
    monkeypatch.setenv("SGLANG_OMNI_ROOT", "/somewhere/else")
    assert runner.reused_parser(cls()).parse_args([]).omni_root == "/somewhere/else"
    monkeypatch.delenv("SGLANG_OMNI_ROOT")
    monkeypatch.setattr(sys, "argv", ["other_name.py"])
    assert runner.reused_parser(cls()).prog == "other_name.py" != reused.prog
    # an instance of its own, or a default a run could change, is never reused: the fallback
    named = cls()
    named.name = "renamed"
    assert runner.reused_parser(named) is not runner.reused_parser(named)

    class ListDefault(cls):
        def add_arguments(self, p):
            super().add_arguments(p)
            p.add_argument("--tags", nargs="*", default=[])

    first = runner.reused_parser(ListDefault())
    assert runner.reused_parser(ListDefault()) is not first
    assert vars(first.parse_args([])) == vars(runner.build_parser(ListDefault()).parse_args([]))

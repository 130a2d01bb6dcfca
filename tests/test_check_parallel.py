"""`check` over two processes finds exactly what it finds in one, and a failed child loses nothing."""

from __future__ import annotations

import os

import pytest

from dossier import check as check_module
from dossier import forked
from dossier.forked import Forked, worth_forking
from test_check import OTHER, edit, findings, kb_card  # noqa: F401 - the fixture: one good card and its lock


@pytest.fixture
def broken_kb(kb_card):
    """Findings on both sides of the split: P rules (the child's) and G/S rules (the parent's)."""
    (kb_card / "references/cards/sglang/43.md").write_text(OTHER)  # a copy of 42: P006/P007, and no lock
    edit(kb_card, '+        x = x.to("cuda", non_blocking=True)', '+        x = x.to("cuda")')  # G001
    return kb_card


def _codes(found):
    return {f.code for f in found}


def test_two_processes_find_what_one_finds(broken_kb, monkeypatch):
    monkeypatch.setenv(forked.JOBS_ENV, "1")
    serial = findings(broken_kb)
    monkeypatch.setenv(forked.JOBS_ENV, "2")
    forks = []
    real = check_module.Forked
    monkeypatch.setattr(check_module, "Forked", lambda func: forks.append(1) or real(func))
    split = findings(broken_kb)
    assert forks == [1]  # the split really happened
    assert split == serial
    assert {"P006", "G001"} <= _codes(serial)


def test_a_child_that_fails_leaves_its_share_to_the_parent(broken_kb, monkeypatch):
    monkeypatch.setenv(forked.JOBS_ENV, "1")
    serial = findings(broken_kb)

    class Failed:  # what Forked gives when the child crashed or was killed
        def __init__(self, func):
            pass

        def result(self):
            return None

    monkeypatch.setenv(forked.JOBS_ENV, "2")
    monkeypatch.setattr(check_module, "Forked", Failed)
    assert findings(broken_kb) == serial
    assert "P006" in _codes(serial)  # a child rule's finding, found by the parent


def test_forked_returns_the_result_or_none():
    big = ["x" * 100] * 5000  # far over a pipe's buffer: the parent must read before it waits
    assert Forked(lambda: big).result() == big
    assert Forked(lambda: 1 / 0).result() is None
    assert Forked(lambda: os._exit(3)).result() is None
    assert Forked(lambda: (lambda: None)).result() is None  # unpicklable: the child fails, not the parent


def test_jobs_setting(monkeypatch):
    monkeypatch.setenv(forked.JOBS_ENV, "1")
    assert not worth_forking(10_000, 100)
    monkeypatch.setenv(forked.JOBS_ENV, "2")
    assert worth_forking(1, 100)
    monkeypatch.delenv(forked.JOBS_ENV)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert not worth_forking(10_000, 100)  # one usable core
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert worth_forking(100, 100) and not worth_forking(99, 100)


def test_timings_name_every_rule_that_ran_and_the_process_it_ran_in(broken_kb, monkeypatch):
    from dossier.config import load_config
    from dossier.kb import KnowledgeBase
    from dossier.rules import RULES

    monkeypatch.setenv(forked.JOBS_ENV, "1")
    serial = findings(broken_kb)
    monkeypatch.setenv(forked.JOBS_ENV, "2")
    timings = check_module.Timings()
    assert check_module.run_check(KnowledgeBase(load_config(broken_kb)), None, None, timings) == serial
    times = timings.cpu
    sides = {code: side for code, side in times}
    assert sides["reading cards"] == "parent" and sides["P006"] == "child" and sides["G001"] == "parent"
    ran = {code for code in sides if code in RULES}
    assert ran == set(RULES)  # every rule, on whichever side it ran
    assert {sides[c] for c in RULES if RULES[c].background} <= {"thread"}
    assert all(sec >= 0 for sec in times.values())
    marks = timings.wall
    assert marks["cards read"] <= marks["forked"] <= marks["parent's rules done"] <= marks["threads done"]
    assert marks["forked"] <= marks["child's rules done"]  # the child's clock is the parent's
    # a child that failed: its rules are timed where they ran instead, and nothing is lost
    monkeypatch.setattr(check_module, "Forked", type("Failed", (), {"__init__": lambda s, f: None,
                                                                     "result": lambda s: None}))
    timings = check_module.Timings()
    assert check_module.run_check(KnowledgeBase(load_config(broken_kb)), None, None, timings) == serial
    assert {side for code, side in timings.cpu if code == "P006"} == {"parent"}
    assert "child's share done here" in timings.wall and "child's rules done" not in timings.wall


def test_check_timings_go_to_stderr_and_leave_the_output_as_it_was(broken_kb):
    import json
    import subprocess
    import sys

    env = {**os.environ, forked.JOBS_ENV: "2", "PYTHONPATH": os.pathsep.join(sys.path)}
    base = [sys.executable, "-m", "dossier.cli", "check", "--root", str(broken_kb), "--format", "json"]
    plain = subprocess.run(base, capture_output=True, text=True, env=env)
    timed = subprocess.run([*base, "--timings"], capture_output=True, text=True, env=env)
    assert timed.returncode == plain.returncode == 1 and json.loads(timed.stdout) == json.loads(plain.stdout)
    lines = timed.stderr.splitlines()
    assert lines[0].startswith("timings (CPU seconds") and "interpreter start and imports" in lines[1]
    assert any(line.split()[:1] == ["P006"] and line.endswith("child") for line in lines)
    assert lines[-2].startswith("  totals: child ") and "parent " in lines[-2]
    assert lines[-1].startswith("  wall clock, seconds since the command started: cards read ")
    assert "child's rules done" in lines[-1]
    assert "timings" not in plain.stderr

"""scripts/bench.py --against: the A/B plumbing (no timing is asserted: the runs are stand-ins)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _is_checkout() -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _is_checkout(), reason="needs the project's git history")
def test_against_runs_each_side_on_its_own_base_alternately_and_prints_the_change(monkeypatch, capsys):
    bench = _bench()
    seen = []

    def stand_in(cmd, root, env, repeat=3):
        side = "ref" if env["PYTHONPATH"] != str(ROOT / "tools") else "tree"
        seen.append((side, (root / "dossier.toml").is_file(), len(list((root / "references/cards").glob("*/*.md")))))
        return (2.0, 4.0) if side == "ref" else (1.5, 3.0)

    monkeypatch.setattr(bench, "cold_run", stand_in)
    bench.against("HEAD", 10, 2, {})
    out = capsys.readouterr().out
    assert "A/B against HEAD" in out and "HEAD 2.000 s wall, 4.00 s CPU" in out and "(-25% wall, -25% CPU)" in out
    # one uncounted run a side, then the sides in turn, each on a full base of its own
    assert [s for s, _, _ in seen] == ["ref", "tree", "ref", "tree", "ref", "tree"]
    assert all(toml and cards > 100 for _, toml, cards in seen)


def test_against_an_unknown_ref_is_one_line():
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--against", "no-such-ref-xyz"],
                         capture_output=True, text=True)
    assert res.returncode != 0 and "--against no-such-ref-xyz:" in res.stderr and "Traceback" not in res.stderr


def test_against_python_alternates_two_interpreters_on_this_tree(monkeypatch, capsys, tmp_path):
    bench = _bench()
    seen = []
    a, b = tmp_path / "a-python", tmp_path / "b-python"  # two names for one interpreter
    a.symlink_to(sys.executable)
    b.symlink_to(sys.executable)

    def stand_in(cmd, root, env, repeat=3):
        seen.append((cmd[0], env["PYTHONPATH"] == str(ROOT / "tools")))
        return (2.0, 3.0) if cmd[0] == str(a) else (1.0, 2.0)

    monkeypatch.setattr(bench, "cold_run", stand_in)
    bench.alternate([("a", ROOT, str(a)), ("b", ROOT, str(b))], 10, 2, {}, "A/B of interpreters")
    out = capsys.readouterr().out
    assert "A/B of interpreters, 10 cards" in out and "a 2.000 s wall" in out and "b 1.000 s wall" in out
    assert "(-50% wall, -33% CPU)" in out
    assert [p for p, _ in seen] == [str(a), str(b)] * 3 and all(own for _, own in seen)


def test_an_interpreter_that_does_not_run_is_one_line(tmp_path):
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--python", str(tmp_path / "nope")],
                         capture_output=True, text=True)
    assert res.returncode != 0 and "--python" in res.stderr and "Traceback" not in res.stderr


def test_describe_names_the_version_and_how_libpython_is_linked():
    out = _bench().describe(sys.executable)
    assert out.startswith("CPython 3.") or out.startswith("PyPy 3.")
    assert ("libpython shared" in out or "libpython linked in" in out) and sys.executable in out


def test_where_the_time_goes_reads_the_timings_table(monkeypatch, tmp_path):
    bench = _bench()
    table = ("timings (CPU seconds ...):\n  interpreter start and imports   0.110  parent\n"
             "  P006   0.400  child\n  reading cards   0.300  parent\n  totals: child 1.100, parent 1.200\n"
             "  wall clock, seconds since the command started: cards read 0.400, forked 0.410\n")
    monkeypatch.setattr(bench.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", table))
    out = bench.where_the_time_goes(tmp_path, {}, top=2)
    assert out == ("interpreter start and imports 0.110 parent; P006 0.400 child; totals: child 1.100, parent 1.200; "
                   "wall clock, seconds since the command started: cards read 0.400, forked 0.410")
    monkeypatch.setattr(bench.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 2, "", "error: boom\n"))
    assert bench.where_the_time_goes(tmp_path, {}) == "no timings (error: boom)"

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

"""The lane registry: `dossier lanes` commands and check rules L010-L012."""

from __future__ import annotations

import json

import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from dossier.check import run_check
from dossier.cli import main
from dossier import lanes as lanes_module
from dossier.config import load_config
from dossier.kb import KnowledgeBase
from dossier.lanes import dry_run, load_lanes

ROOT = Path(__file__).resolve().parents[1]


LANE_REGISTRY_RULES = ("L010", "L011", "L012")


def findings(root: Path, select: str | None = None):
    return run_check(KnowledgeBase(load_config(root)), [select] if select else list(LANE_REGISTRY_RULES))


def write_registry(root: Path, lanes: list[dict]) -> None:
    # through JSON: a dict shared by two lanes would otherwise be dumped as an anchor and alias, which the reader refuses
    (root / "playbook" / "lanes.yaml").write_text(yaml.safe_dump({"lanes": json.loads(json.dumps(lanes))}, sort_keys=False))


def with_scripts(kb: Path) -> Path:
    if not (kb / "playbook" / "lanes").is_dir():  # the kb fixture normally copies them
        shutil.copytree(ROOT / "playbook" / "lanes", kb / "playbook" / "lanes",
                        ignore=shutil.ignore_patterns("__pycache__"))
    return kb


def test_shipped_lanes_pass_and_a_second_check_reuses_the_verdicts(monkeypatch):
    assert findings(ROOT) == []

    def no_subprocess(*args, **kwargs):
        raise AssertionError("a dry-run ran again although no lane input changed")

    monkeypatch.setattr(lanes_module.subprocess, "run", no_subprocess)
    assert findings(ROOT) == []  # second run: verdicts come from .dossier-cache


def test_every_registered_lane_dry_runs():
    for lane in load_lanes(ROOT):
        ok, msg = dry_run(ROOT, lane)
        assert ok, f"{lane['id']}: {msg}"


def test_l010_fires_for_missing_fields_duplicates_and_unknown_family(kb):
    with_scripts(kb)
    write_registry(kb, [
        {"id": "a", "script": "playbook/lanes/vl_image.py"},
        {"id": "b", "title": "B", "script": "playbook/lanes/vl_image.py", "families": ["qwen9-vl"]},
        {"id": "b", "title": "B again", "script": "playbook/lanes/vl_image.py", "repo": "nope"},
        "not a mapping",
    ])
    msgs = [(f.line, f.message) for f in findings(kb, "L010")]
    assert (2, "lane entry missing 'title'") in msgs
    assert any("unknown family 'qwen9-vl'" in m for _, m in msgs)
    assert any("duplicate lane id 'b'" in m for _, m in msgs)
    assert any("unknown repo 'nope'" in m for _, m in msgs)
    assert any("not a mapping" in m for _, m in msgs)


def test_l010_fires_for_a_registry_that_is_not_a_list(kb):
    (kb / "playbook" / "lanes.yaml").write_text("lanes: {oops: 1}\n")
    [f] = findings(kb, "L010")
    assert f.code == "L010" and "'lanes' list" in f.message


def test_l011_fires_when_the_script_is_missing(kb):
    shutil.rmtree(kb / "playbook" / "lanes")
    found = findings(kb, "L011")
    assert {f.code for f in found} == {"L011"}
    assert len(found) == len(load_lanes(kb)) and "not found" in found[0].message
    assert findings(kb, "L012") == []  # a missing script is L011's to report


def test_l012_fires_when_dry_run_fails_or_prints_another_command(kb):
    lanes_dir = kb / "playbook" / "lanes"
    lanes_dir.mkdir(parents=True, exist_ok=True)
    (lanes_dir / "broken.py").write_text("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n")
    (lanes_dir / "drifted.py").write_text("print('server: python -m sglang.launch_server --model-path m --port 1')\n")
    (lanes_dir / "fine.py").write_text(
        "print('server: python -m sglang.launch_server --model-path m --port 30000 --tp 2')\n")
    server = {"cmd": "python -m sglang.launch_server --model-path {model} --port {port} --tp 2"}
    write_registry(kb, [
        {"id": "broken", "title": "T", "script": "playbook/lanes/broken.py"},
        {"id": "drifted", "title": "T", "script": "playbook/lanes/drifted.py", "model": "m", "server": server},
        {"id": "fine", "title": "T", "script": "playbook/lanes/fine.py", "model": "m", "server": server},
    ])
    found = {f.message.split("'")[1]: f.message for f in findings(kb, "L012")}
    assert set(found) == {"broken", "drifted"}
    assert "exited 3: boom" in found["broken"]
    assert "differs from server.cmd" in found["drifted"]
    # the cache must notice an edited script
    (lanes_dir / "fine.py").write_text("raise SystemExit(4)\n")
    assert {f.message.split("'")[1] for f in findings(kb, "L012")} == {"broken", "drifted", "fine"}


def test_l012_compares_an_in_process_lane_with_its_engine_line(kb):
    lanes_dir = kb / "playbook" / "lanes"
    (lanes_dir / "engine_ok.py").write_text("print(\"engine: sglang.Engine(model_path='m')\")\n")
    (lanes_dir / "engine_drift.py").write_text("print(\"engine: sglang.Engine(model_path='m', tp_size=2)\")\n")
    engine = "sglang.Engine(model_path='{model}')"
    write_registry(kb, [
        {"id": "ok", "title": "T", "script": "playbook/lanes/engine_ok.py", "model": "m", "engine": engine},
        {"id": "drift", "title": "T", "script": "playbook/lanes/engine_drift.py", "model": "m", "engine": engine},
    ])
    [f] = findings(kb, "L012")
    assert "'drift'" in f.message and "engine command differs from engine: engine: sglang.Engine(" in f.message


def test_cli_lanes_list_show_and_run(kb):
    with_scripts(kb)
    runner = CliRunner()
    res = runner.invoke(main, ["lanes", "list", "--root", str(kb)])
    assert res.exit_code == 0 and "asr-websocket-stream" in res.output and "omni-speech" in res.output
    res = runner.invoke(main, ["lanes", "show", "vl-encoder-dp", "--root", str(kb)])
    assert res.exit_code == 0 and "--mm-enable-dp-encoder" in res.output and "run: python" in res.output
    res = runner.invoke(main, ["lanes", "show", "nope", "--root", str(kb)])
    assert res.exit_code == 2 and "unknown lane 'nope'" in res.output


def test_cli_lanes_run_passes_registry_and_extra_args(kb, capfd):
    with_scripts(kb)
    res = CliRunner().invoke(main, ["lanes", "run", "vl-encoder-dp", "--root", str(kb), "--", "--dry-run"])
    assert res.exit_code == 0
    out = capfd.readouterr().out
    assert "lane: vl-encoder-dp" in out and "--tp 2 --mm-enable-dp-encoder" in out


def test_l012_dry_runs_are_sent_to_the_lane_subprocess_before_the_cards_load(kb, monkeypatch):
    from dossier import cards as cards_module
    from dossier.lane_interpreter import LaneInterpreter

    lanes_dir = kb / "playbook" / "lanes"
    (lanes_dir / "fine.py").write_text("print('fine')\n")
    (lanes_dir / "broken.py").write_text("raise SystemExit(3)\n")
    write_registry(kb, [{"id": "fine", "title": "T", "script": "playbook/lanes/fine.py"},
                        {"id": "broken", "title": "T", "script": "playbook/lanes/broken.py"}])
    (kb / "references" / "cards" / "sglang").mkdir(parents=True)
    (kb / "references" / "cards" / "sglang" / "1.md").write_text("---\nrepo: sglang\n---\n")
    events = []
    send, parse, call = LaneInterpreter.send_ahead, cards_module.parse_card, LaneInterpreter.call
    monkeypatch.setattr(LaneInterpreter, "send_ahead", lambda self, op, arg: (events.append(("ahead", op)), send(self, op, arg)))
    monkeypatch.setattr(LaneInterpreter, "call", lambda self, op, arg, t: (events.append(("call", op)), call(self, op, arg, t))[1])
    monkeypatch.setattr("dossier.kb.parse_card", lambda *a: (events.append(("parse", None)), parse(*a))[1])
    found = run_check(KnowledgeBase(load_config(kb)), ["L012"])
    assert [f.message.split("'")[1] for f in found] == ["broken"]  # the early answer is the one judged
    assert events.index(("ahead", "dry_runs")) < events.index(("parse", None)) < events.index(("call", "dry_runs"))
    assert events.count(("ahead", "dry_runs")) == 1
    # cached now: nothing is sent ahead, and the verdicts are the same
    events.clear()
    assert [f.message.split("'")[1] for f in run_check(KnowledgeBase(load_config(kb)), ["L012"])] == ["broken"]
    assert ("ahead", "dry_runs") not in events and ("call", "dry_runs") not in events


def test_a_failing_send_ahead_leaves_l012_to_ask_itself(kb, monkeypatch):
    from dossier.kb import KnowledgeBase as KB

    (kb / "playbook" / "lanes" / "broken.py").write_text("raise SystemExit(3)\n")
    write_registry(kb, [{"id": "broken", "title": "T", "script": "playbook/lanes/broken.py"}])

    def boom(self, lanes):
        raise OSError("no pipe")

    monkeypatch.setattr(KB, "send_lane_verdicts_ahead", boom)
    assert [f.message.split("'")[1] for f in findings(kb, "L012")] == ["broken"]

"""The release layer: both repos' wheels listed, each card's state in the release, and the checks on it
(B003 stale listing, L016/K007 for sglang-omni, R006 a radar claim about the release)."""

from __future__ import annotations

import json
import zipfile

from click.testing import CliRunner

from dossier.check import run_check
from dossier.cli import main
from dossier.config import load_config
from dossier.fetch import fetch_git
from dossier.kb import KnowledgeBase

SCHED = "sglang_omni/models/qwen3_omni/components/code2wav_scheduler.py"
CODE = ("class Code2WavScheduler:\n    def __init__(self, stream_chunk_size):\n"
        "        self.stream_chunk_size = stream_chunk_size\n        self.left_context_size = 25\n"
        "        self.first_chunk_ready = False\n")


def _omni_wheel(tmp_path, sched_source: str, version="0.1.9"):
    path = tmp_path / f"sglang_omni-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(SCHED, sched_source)
        z.writestr("sglang_omni/cli/serve.py", "def serve(model_path: A[str, typer.Option('--model-path')],\n"
                                               "          port: A[int, typer.Option('--port')] = 8000): ...\n")
        z.writestr("sglang_omni/config/schema.py", "class StageConfig(BaseModel):\n    name: str\n    gpu: int = 0\n")
        z.writestr("sglang_omni/models/qwen3_omni/config.py", "class Qwen3OmniPipelineConfig:\n    relay: str = 'shm'\n"
                                                              "ENV = 'SGLANG_OMNI_RELAY'\n")
        z.writestr(f"sglang_omni-{version}.dist-info/METADATA", "Name: sglang-omni\n")
    return path


def _omni_card(kb, up):
    up.write(SCHED, "class Code2WavScheduler:\n    pass\n")
    up.commit("init (#1)")
    up.write(SCHED, CODE)
    up.commit("[Qwen3-Omni] code2wav chunking (#2)")
    fetch_git(load_config(kb), "sglang-omni", [2], str(up.path))
    p = kb / "references/cards/sglang-omni/2.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("---\nrepo: sglang-omni\npr: 2\n---\n")


def _list(kb, wheel, repo="sglang-omni"):
    res = CliRunner().invoke(main, ["tree", repo, "--wheel", str(wheel), "--root", str(kb)])
    assert res.exit_code == 0, res.output
    return json.loads((kb / f"references/trees/{repo}-release.json").read_text()), res.output


def test_the_omni_wheel_is_listed_with_cli_options_config_fields_and_card_states(kb, upstream, tmp_path):
    _omni_card(kb, upstream)
    doc, out = _list(kb, _omni_wheel(tmp_path, CODE + "    def emit(self, initial_chunk_frames=0):\n        pass\n"))
    assert doc["repo"] == "sglang-omni" and doc["version"] == "0.1.9" and SCHED in doc["paths"]
    assert {"--model-path", "--port"} <= set(doc["flags"]) and "StageConfig.gpu" in doc["config_fields"]
    assert "Qwen3OmniPipelineConfig.relay" in doc["config_fields"] and "SGLANG_OMNI_RELAY" in doc["env"]
    assert "Code2WavScheduler.emit" in doc["symbols"][SCHED]
    assert doc["cards"]["2"] == {"state": "present", "added": 4, "present": 4} and "1 present" in out
    # nothing of the wheel's code: names and hashes only
    assert "self.left_context_size = 25" not in json.dumps(doc)


def test_card_states_in_the_release_partly_absent_and_moved(kb, upstream, tmp_path):
    _omni_card(kb, upstream)
    partly = CODE.replace("        self.left_context_size = 25\n        self.first_chunk_ready = False\n", "")
    assert _list(kb, _omni_wheel(tmp_path, partly))[0]["cards"]["2"]["state"] == "partly"
    assert _list(kb, _omni_wheel(tmp_path, "class Code2WavScheduler:\n    pass\n"))[0]["cards"]["2"]["state"] == "absent"
    wheel = _omni_wheel(tmp_path, "")
    with zipfile.ZipFile(wheel, "a") as z:
        z.writestr("sglang_omni/scheduling/vocoder_base.py", CODE)
    assert _list(kb, wheel)[0]["cards"]["2"]["state"] == "moved"


def test_b003_fires_on_a_missing_stale_or_other_version_listing(kb, upstream, tmp_path):
    toml = kb / "dossier.toml"
    toml.write_text(toml.read_text().replace('upstream = "sgl-project/sglang-omni"\n',
                                             'upstream = "sgl-project/sglang-omni"\nrelease = "0.1.9"\n'))
    _omni_card(kb, upstream)

    def b003():
        return [f.message for f in run_check(KnowledgeBase(load_config(kb)), select=["B003"])]

    assert "no release listing for sglang-omni 0.1.9" in b003()[0]
    _list(kb, _omni_wheel(tmp_path, CODE, version="0.1.8"))
    assert "lists sglang-omni 0.1.8" in b003()[0]
    _list(kb, _omni_wheel(tmp_path, CODE))
    assert b003() == []
    fetch_git(load_config(kb), "sglang-omni", [1], str(upstream.path))
    (kb / "references/cards/sglang-omni/1.md").write_text("---\nrepo: sglang-omni\npr: 1\n---\n")
    assert "1 sglang-omni card(s) not in the release listing" in b003()[0]


def test_l016_and_k007_cover_sglang_omni(kb, tmp_path):
    _list(kb, _omni_wheel(tmp_path, CODE))
    (kb / "playbook/symptoms").mkdir(parents=True, exist_ok=True)
    entry = ("entries:\n  - id: omni-ttfa\n    symptom: first audio late\n    sublane: omni-speech\n"
             "    look:\n      - repo: sglang-omni\n        file: sglang_omni/models/tts_streaming.py\n        why: {why}\n"
             "    knobs: [SGLANG_OMNI_OLD_KNOB]\n    measure: TTFA\n    lanes: [omni-speech]\n")
    (kb / "playbook/symptoms/omni.yaml").write_text(entry.format(why="the helper"))
    found = [f.message for f in run_check(KnowledgeBase(load_config(kb)), select=["L016"])]
    assert sorted(m.split(": ")[1].split(" is ")[0] for m in found) == [
        "SGLANG_OMNI_OLD_KNOB", "sglang_omni/models/tts_streaming.py"]
    assert all("sglang-omni 0.1.9" in m for m in found)
    (kb / "SKILL.md").write_text("---\nname: x\n---\nThe helper is in `sglang_omni/models/tts_streaming.py`.\n")
    assert [f.code for f in run_check(KnowledgeBase(load_config(kb)), select=["K007"])] == ["K007"]
    (kb / "SKILL.md").write_text("---\nname: x\n---\nThe helper was `sglang_omni/models/tts_streaming.py` (gone in 0.1.9).\n")
    assert run_check(KnowledgeBase(load_config(kb)), select=["K007"]) == []


RADAR = """items:
  - id: omni-first-chunk
    repo: sglang-omni
    number: 1148
    kind: issue
    title: smaller first chunk
    state: open
    last_checked: 2026-12-01
    lanes: [omni-speech]
    files: [{sched}]
    symptom: first audio waits for a full chunk
    release: {{version: "{version}", file: {sched}, symbols: [{symbol}]}}
"""


def test_r006_checks_a_radar_claim_against_the_release(kb, tmp_path):
    def r006(version="0.1.9", symbol="initial_chunk_frames"):
        (kb / "references").mkdir(exist_ok=True)
        (kb / "references/radar.yaml").write_text(RADAR.format(sched=SCHED, version=version, symbol=symbol))
        return [f.message for f in run_check(KnowledgeBase(load_config(kb)), select=["R006", "R001"])]

    _list(kb, _omni_wheel(tmp_path, CODE))
    assert "has no names for" in r006()[0]  # listed before the radar named the file: list again
    _list(kb, _omni_wheel(tmp_path, CODE + "    def emit(self, initial_chunk_frames=0):\n        pass\n"))
    assert r006() == []
    assert "has no first_chunk_frames" in r006(symbol="first_chunk_frames")[0]
    assert "is not the listed sglang-omni 0.1.9" in r006(version="0.1.8")[0]
    from dossier.build import build

    r006()
    build(KnowledgeBase(load_config(kb)))
    page = (kb / "references/radar.md").read_text()
    assert "Present in release 0.1.9, merged after the pinned history" in page and "`initial_chunk_frames`" in page


def test_a_wheel_of_neither_repo_is_one_line(kb, tmp_path):
    bad = tmp_path / "torch-2.0-py3-none-any.whl"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("torch/__init__.py", "")
    res = CliRunner().invoke(main, ["tree", "sglang-omni", "--wheel", str(bad), "--root", str(kb)])
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "not an sglang or sglang-omni wheel" in res.output
    res = CliRunner().invoke(main, ["tree", "sglang", "--wheel", str(_omni_wheel(tmp_path, CODE)), "--root", str(kb)])
    assert res.exit_code == 2 and "a sglang-omni wheel, not sglang" in res.output


def test_a_large_member_nothing_reads_is_no_reason_to_refuse_the_wheel(kb, upstream, tmp_path):
    """sglang 0.5.23's wheel holds a 24 MB compiled extension: only the members read are capped."""
    _omni_card(kb, upstream)
    wheel = _omni_wheel(tmp_path, CODE)
    with zipfile.ZipFile(wheel, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("sglang_omni/_ext.cpython-311-x86_64-linux-gnu.so", b"\0" * (17 * 1024 * 1024))
    doc, _ = _list(kb, wheel)
    assert doc["cards"]["2"]["state"] == "present"
    with zipfile.ZipFile(wheel, "a", zipfile.ZIP_DEFLATED) as z:  # a member that is read is capped
        z.writestr("sglang_omni/cli/big.py", "#" * (17 * 1024 * 1024))
    res = CliRunner().invoke(main, ["tree", "sglang-omni", "--wheel", str(wheel), "--root", str(kb)])
    assert res.exit_code == 2 and "sglang_omni/cli/big.py unpacks to" in res.output
    assert json.loads((kb / "references/trees/sglang-omni-release.json").read_text()) == doc  # left as it was

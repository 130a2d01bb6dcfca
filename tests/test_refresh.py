"""The refresh machinery: what superseded what (git alone), the release listing of a wheel,
and the rules that keep the playbook and SKILL.md honest about both (B002, L015, L016,
K007, K008)."""

from __future__ import annotations

import json
import zipfile

import pytest
from click.testing import CliRunner

from dossier.build import build
from dossier.check import run_check
from dossier.cli import main
from dossier.config import load_config
from dossier.kb import KnowledgeBase
from dossier.fetch import fetch_git

VL = "python/sglang/srt/models/qwen3_vl.py"
UTILS = "python/sglang/srt/managers/mm_utils.py"
SCHED = "python/sglang/srt/managers/mm_schedule.py"


def _history(up):
    up.write(VL, "class Vision:\n    def forward(self, x):\n        return x\n")
    up.write(UTILS, "def embed(items):\n    return items\n")
    up.commit("init (#1)")
    up.write(VL, "class Vision:\n    def forward(self, x):\n        x = x.pin_memory()\n        x = x.to('cuda', non_blocking=True)\n"
                 "        y = x.float()\n        return y\n")
    up.write(UTILS, "def embed(items):\n    moved = [i.cuda() for i in items]\n    keep = list(moved)\n    return keep\n")
    up.commit("[VLM] copy once (#2)")
    # #3 rewrites #2's vision lines; #4 moves #2's mm_utils lines into mm_schedule (a move, not a rewrite)
    up.write(VL, "class Vision:\n    def forward(self, x):\n        x = x.to('cuda')\n        return x.float()\n")
    up.commit("[VLM] simpler copy (#3)")
    up.write(UTILS, "from .mm_schedule import embed\n")
    up.write(SCHED, "def embed(items):\n    moved = [i.cuda() for i in items]\n    keep = list(moved)\n    return keep\n")
    up.commit("split mm_utils into mm_schedule (#4)")


def _card(kb, pr, extra=""):
    p = kb / f"references/cards/sglang/{pr}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"---\nrepo: sglang\npr: {pr}\n{extra}---\n")


@pytest.fixture
def skb(upstream, kb):
    _history(upstream)
    fetch_git(load_config(kb), "sglang", [2, 3], str(upstream.path))
    _card(kb, 2)
    _card(kb, 3)
    return kb


def _supersede(kb, up):
    res = CliRunner().invoke(main, ["trace", "--all", "--clone", str(up.path), "--supersede", "--root", str(kb)])
    assert res.exit_code == 0, res.output
    return json.loads((kb / "references/supersession.json").read_text())["repos"]["sglang"]


def test_supersession_names_the_rewriting_pr_and_ignores_moves(skb, upstream):
    data = _supersede(skb, upstream)
    two = data["cards"]["2"]
    by = {e["pr"]: e["lines"] for e in two["superseded_by"]}
    assert by == {3: 4}  # the four vision lines #3 rewrote; #4 moved the mm_utils lines, it did not remove them
    # Vision.forward still stands with #3's lines: rewritten in place, and 3 + 4 lines carried
    assert two["added"] == 7 and two["present"] == 3 and two["state"] == "rewritten"
    assert two["superseded_by"][0]["how"] == "rewritten" and two["superseded_by"][0]["to"] == [f"{VL}::Vision.forward"]
    assert data["cards"]["3"]["state"] == "live" and data["cards"]["3"]["superseded_by"] == []
    assert data["ref"] == upstream.run("rev-parse", "HEAD").strip()


def test_trace_live_shows_superseded_by(skb, upstream):
    res = CliRunner().invoke(main, ["trace", "--all", "--clone", str(upstream.path), "--live", "--format", "json",
                                    "--root", str(skb)])
    assert res.exit_code == 0, res.output
    rows = {r["pr"]: r for r in json.loads(res.output)}
    assert rows[2]["live"]["superseded_by"] == [3]
    text = CliRunner().invoke(main, ["trace", "--all", "--clone", str(upstream.path), "--live", "--root", str(skb)])
    assert "superseded by #3" in text.output


def test_supersession_goes_stale_with_a_new_card_or_lock(skb, upstream):
    assert run_check(KnowledgeBase(load_config(skb)), select=["B002"]) == []  # unpinned: not required
    head = upstream.run("rev-parse", "HEAD").strip()
    toml = (skb / "dossier.toml").read_text().replace('default_branch = "main"\n', f'default_branch = "main"\npinned = "{head}"\n', 1)
    (skb / "dossier.toml").write_text(toml)
    assert [f for f in run_check(KnowledgeBase(load_config(skb)), select=["B002"])][0].code == "B002"  # pinned, never computed
    _supersede(skb, upstream)
    assert run_check(KnowledgeBase(load_config(skb)), select=["B002"]) == []
    fetch_git(load_config(skb), "sglang", [4], str(upstream.path))
    _card(skb, 4)
    found = run_check(KnowledgeBase(load_config(skb)), select=["B002"])
    assert [f.code for f in found] == ["B002"] and "sglang#4" in found[0].message


def _playbook(kb, cards):
    (kb / "playbook" / "symptoms").mkdir(parents=True, exist_ok=True)
    (kb / "playbook/symptoms/video.yaml").write_text(
        "entries:\n  - id: vl-copy-slow\n    symptom: video copies are slow\n    sublane: video\n"
        f"    look:\n      - repo: sglang\n        file: {VL}\n        why: the copy\n"
        f"    cards: [{', '.join(cards)}]\n    measure: TTFT p50\n    lanes: [vl-video]\n")


def test_playbook_citing_a_gone_card_must_cite_its_successor(skb, upstream):
    _supersede(skb, upstream)
    data = json.loads((skb / "references/supersession.json").read_text())
    data["repos"]["sglang"]["cards"]["2"]["state"] = "gone"  # as if #3 had rewritten every line
    (skb / "references/supersession.json").write_text(json.dumps(data))
    _playbook(skb, ["sglang/2"])
    found = run_check(KnowledgeBase(load_config(skb)), select=["L015"])
    assert [f.code for f in found] == ["L015"] and "cite sglang/3" in found[0].message
    _playbook(skb, ["sglang/3", "sglang/2"])
    assert run_check(KnowledgeBase(load_config(skb)), select=["L015"]) == []


def test_a_gone_or_reverted_card_must_name_what_took_its_lines(skb, upstream):
    _supersede(skb, upstream)
    data = json.loads((skb / "references/supersession.json").read_text())
    two = data["repos"]["sglang"]["cards"]["2"]
    two["state"] = "gone"  # as if #3 had removed every line (it took 4 of 7: significant)
    (skb / "references/supersession.json").write_text(json.dumps(data))

    def l035():
        return run_check(KnowledgeBase(load_config(skb)), select=["L035"])

    found = l035()
    assert [(f.path, f.code) for f in found] == [("references/cards/sglang/2.md", "L035")]
    assert "gone at the pinned SHA (superseded by #3)" in found[0].message
    _card(skb, 2, "title: copy once\n")
    (skb / "references/cards/sglang/2.md").write_text(
        (skb / "references/cards/sglang/2.md").read_text() + "\n#3 rewrote these lines.\n")
    assert l035() == []  # the body names the PR
    two["state"], two["reverted_by"] = "reverted", {"pr": 9, "sha": "0" * 40}
    (skb / "references/supersession.json").write_text(json.dumps(data))
    found = l035()  # a revert has to be named itself, not any superseder
    assert [f.code for f in found] == ["L035"] and "reverted by #9" in found[0].message
    two["state"] = "rewritten"  # the symbols still stand: nothing to say
    (skb / "references/supersession.json").write_text(json.dumps(data))
    assert l035() == []


def _wheel(tmp_path, flags=("mm_feature_transport",), env=("SGLANG_USE_CUDA_IPC_TRANSPORT",)):
    path = tmp_path / "sglang-9.9.9-cp311-cp311-manylinux_2_34_x86_64.whl"
    with zipfile.ZipFile(path, "w") as z:
        fields = "".join(f"    {f}: A[str, 'help'] = None\n" for f in flags)
        z.writestr("sglang/srt/server_args.py", f"class ServerArgs:\n{fields}    model_path: str = ''\n")
        z.writestr("sglang/srt/arg_groups/fields/mm.py", "class Mm:\n    mm_attention_backend: A[str] = None\n")
        z.writestr("sglang/srt/environ.py", "".join(f"{e} = EnvBool(False)\n" for e in env))
        z.writestr(VL, "")
        z.writestr("sglang/srt/models/qwen3_vl.py", "")
    return path


def test_release_listing_from_a_wheel(kb, tmp_path):
    res = CliRunner().invoke(main, ["tree", "sglang", "--wheel", str(_wheel(tmp_path)), "--root", str(kb)])
    assert res.exit_code == 0, res.output
    doc = json.loads((kb / "references/trees/sglang-release.json").read_text())
    assert doc["version"] == "9.9.9"
    assert {"--mm-feature-transport", "--model-path", "--mm-attention-backend"} <= set(doc["flags"])
    assert doc["env"] == ["SGLANG_USE_CUDA_IPC_TRANSPORT"] and VL in doc["paths"]
    bad = tmp_path / "not-a-wheel.whl"
    bad.write_bytes(b"nope")
    res = CliRunner().invoke(main, ["tree", "sglang", "--wheel", str(bad), "--root", str(kb)])
    assert res.exit_code == 2 and res.output.count("\n") == 1


def test_playbook_and_skill_say_what_the_release_lacks(kb, tmp_path):
    CliRunner().invoke(main, ["tree", "sglang", "--wheel", str(_wheel(tmp_path)), "--root", str(kb)])
    (kb / "playbook/symptoms").mkdir(parents=True, exist_ok=True)
    entry = ("entries:\n  - id: vl-video-oom\n    symptom: video OOM\n    sublane: video\n"
             f"    look:\n      - repo: sglang\n        file: {VL}\n        why: features\n"
             "      - repo: sglang\n        file: python/sglang/srt/disaggregation/encode_server.py\n        why: {why}\n"
             "    knobs: [{knob}, --mm-feature-transport]\n    measure: peak memory\n    lanes: [vl-video]\n")
    (kb / "playbook/symptoms/video.yaml").write_text(entry.format(why="encoder", knob="--keep-mm-feature-on-device"))
    found = run_check(KnowledgeBase(load_config(kb)), select=["L016"])
    assert sorted(f.message.split(": ")[1].split(" is ")[0] for f in found) == [
        "--keep-mm-feature-on-device", "python/sglang/srt/disaggregation/encode_server.py"]
    (kb / "playbook/symptoms/video.yaml").write_text(entry.format(
        why="gone in 9.9.9 (moved to encoder/server.py)", knob='"--keep-mm-feature-on-device (removed in 9.9.9)"'))
    assert run_check(KnowledgeBase(load_config(kb)), select=["L016"]) == []
    (kb / "SKILL.md").write_text("---\nname: x\n---\nLaunch with `--keep-mm-feature-on-device`.\n")
    assert [f.code for f in run_check(KnowledgeBase(load_config(kb)), select=["K007"])] == ["K007"]
    (kb / "SKILL.md").write_text("---\nname: x\n---\nLaunch with `--keep-mm-feature-on-device` (not in 9.9.9).\n")
    assert run_check(KnowledgeBase(load_config(kb)), select=["K007"]) == []


def test_skill_and_generated_files_state_the_pin(kb):
    pin = "3c69a4c744525be0146629fc5933e3ddab609fb2"
    text = (kb / "dossier.toml").read_text().replace(
        'default_branch = "main"\n', f'default_branch = "main"\npinned = "{pin}"\npinned_pr = 35974\n'
                                     'pinned_date = "2026-08-22"\n', 1)
    (kb / "dossier.toml").write_text(text)
    (kb / "SKILL.md").write_text("---\nname: x\n---\nCurrent to nothing in particular.\n")
    found = run_check(KnowledgeBase(load_config(kb)), select=["K008"])
    assert [f.code for f in found] == ["K008"] and "3c69a4c74452" in found[0].message
    (kb / "SKILL.md").write_text("---\nname: x\n---\nCurrent to `3c69a4c74452` (#35974, 2026-08-22).\n")
    assert run_check(KnowledgeBase(load_config(kb)), select=["K008"]) == []
    build(KnowledgeBase(load_config(kb)))
    assert "As of sgl-project/sglang main at 3c69a4c74452 (#35974, 2026-08-22)" in \
        (kb / "references/pr-history.md").read_text()

"""Moved, rewritten, reverted, gone: what later PRs did with a card's added lines, on small histories."""

from __future__ import annotations

import json

from click.testing import CliRunner

from dossier.cli import main
from dossier.config import load_config
from dossier.fate import enclosing, normalise, spans
from dossier.fetch import fetch_git

VL = "python/sglang/srt/models/qwen3_vl.py"
NEW = "python/sglang/srt/multimodal/encoder/receiver.py"  # outside every family glob: found through the commit

BASE = "class Vision:\n    def forward(self, x):\n        return x\n\n\ndef keep():\n    return 1\n"
CARD = ("class Vision:\n    def forward(self, x):\n        return x\n\n    def offload(self, items):\n"
        "        moved = [item.to('cpu', non_blocking=True) for item in items]\n"
        "        self.cache.extend(moved)\n        torch.cuda.current_stream().synchronize()\n"
        "        return len(self.cache)\n\n\ndef keep():\n    return 1\n")


def _card(kb, pr):
    p = kb / f"references/cards/sglang/{pr}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"---\nrepo: sglang\npr: {pr}\n---\n")


def _run(kb, up, then):
    up.write(VL, BASE)
    up.commit("init (#1)")
    up.write(VL, CARD)
    up.commit("[VLM] offload cached features (#2)")
    then(up)
    fetch_git(load_config(kb), "sglang", [2], str(up.path))
    _card(kb, 2)
    res = CliRunner().invoke(main, ["trace", "--all", "--clone", str(up.path), "--supersede", "--root", str(kb)])
    assert res.exit_code == 0, res.output
    entry = json.loads((kb / "references/supersession.json").read_text())["repos"]["sglang"]["cards"]["2"]
    live = CliRunner().invoke(main, ["trace", "qwen3-vl", "--live", "--clone", str(up.path), "--format", "json",
                                     "--root", str(kb)])
    assert live.exit_code == 0, live.output
    row = {r["pr"]: r for r in json.loads(live.output)}[2]
    return entry, row["live"]


def test_a_move_with_edits_is_moved_with_its_new_place(kb, upstream):
    def move(up):
        up.write(VL, BASE)
        up.write(NEW, "import torch\n\n\nclass EmbeddingReceiver:\n    def release(self, items, stream=None):\n"
                      "        # edited on the way: a stream argument\n"
                      "        moved = [item.to('cpu', non_blocking=True) for item in items]\n"
                      "        self.cache.extend(moved)\n        (stream or torch.cuda.current_stream()).synchronize()\n"
                      "        return len(self.cache)\n")
        up.commit("[Refactor] New EPD (#3)")

    entry, live = _run(kb, upstream, move)
    assert entry["state"] == "moved" and entry["present"] == 0
    assert entry["moved_to"] == [f"{NEW}::EmbeddingReceiver.release"]
    assert entry["superseded_by"][0]["pr"] == 3 and entry["superseded_by"][0]["how"] == "moved"
    assert live["state"] == "moved" and live["moved_to"] == entry["moved_to"] and live["superseded_by"] == [3]


def test_a_pure_revert_is_reverted_by_the_revert_pr(kb, upstream):
    def revert(up):
        up.write(VL, BASE)
        up.commit('Revert "[VLM] offload cached features (#2)" (#3)')

    entry, live = _run(kb, upstream, revert)
    assert entry["state"] == "reverted" and entry["reverted_by"] == 3
    assert live["state"] == "reverted" and live["reverted_by"] == 3


def test_a_rewrite_in_place_is_rewritten(kb, upstream):
    def rewrite(up):
        up.write(VL, CARD.replace("        moved = [item.to('cpu', non_blocking=True) for item in items]\n"
                                  "        self.cache.extend(moved)\n        torch.cuda.current_stream().synchronize()\n"
                                  "        return len(self.cache)\n",
                                  "        self.cache += offload_all(items)\n        return self.cache_size()\n"))
        up.commit("[VLM] batch the offload (#3)")

    entry, live = _run(kb, upstream, rewrite)
    assert entry["state"] == "rewritten" and entry["superseded_by"][0]["to"] == [f"{VL}::Vision.offload"]
    assert "moved_to" not in entry and live["state"] == "rewritten"


def test_a_true_removal_is_gone(kb, upstream):
    def remove(up):
        up.write(VL, BASE)
        up.commit("[VLM] drop the offload (#3)")

    entry, live = _run(kb, upstream, remove)
    assert entry["state"] == "gone" and entry["superseded_by"][0]["how"] == "gone"
    assert live["state"] == "gone" and live["superseded_by"] == [3]


def test_incidental_touches_are_folded_into_a_count(kb, upstream):
    def touches(up):
        text = CARD
        for n, (old, new) in enumerate([("        self.cache.extend(moved)\n", "        self.cache += moved\n"),
                                        ("        return len(self.cache)\n", "        return self.size\n")], 3):
            text = text.replace(old, new)
            up.write(VL, text)
            up.commit(f"lint sweep {n} (#{n})")
        up.write(VL, BASE)
        up.commit("[VLM] drop the offload (#5)")

    entry, _ = _run(kb, upstream, touches)
    assert [e["pr"] for e in entry["superseded_by"]] == [5]  # ordered by lines carried; one-line touches folded
    assert entry["incidental"] == {"prs": 2, "lines": 2}


def test_symbol_tables():
    table = spans("class A:\n    @dec\n    def f(self):\n        x = 1\n\n        return x\n\ndef g():\n    pass\n")
    assert enclosing(table, 4) == "A.f" and enclosing(table, 2) == "A.f" and enclosing(table, 9) == "g"
    assert enclosing(table, 7) == "A" or enclosing(table, 7) is None
    assert spans("def (") == [] and normalise("  a  =   b ") == "a = b"

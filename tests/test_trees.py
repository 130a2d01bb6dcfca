"""`dossier tree`: path listing and symbol names from a small upstream repository."""

from __future__ import annotations

import json

from click.testing import CliRunner

from dossier.cli import main
from dossier.config import load_config
from dossier.kb import KnowledgeBase
from dossier.trees import keep_path, list_tree, load_symbols, python_symbols

QWEN3_VL = '''\
import torch

class Qwen3VLForConditionalGeneration:
    def get_video_feature(self, items):
        return items

    async def stream(self):
        pass

    class Inner:
        def hidden(self):
            pass

def helper():
    def nested():
        pass
    return nested

CONSTANT = 3
'''


def build_upstream(upstream):
    upstream.write("python/sglang/srt/models/qwen3_vl.py", QWEN3_VL)
    upstream.write("python/sglang/srt/models/broken.py", "def (:\n")
    upstream.write("python/sglang/multimodal_gen/runtime/x.py", "def gen(): pass\n")
    upstream.write("python/sglang/srt/multimodal_gen/y.py", "def gen(): pass\n")
    upstream.write("docs/basic_usage/qwen3_vl.md", "# Qwen3-VL\n")
    upstream.write("docs/img/logo.png", b"\x89PNG")
    upstream.write("sgl-kernel/csrc/a.cu", "// kernel\n")
    upstream.write("test/registered/vlm/test_x.py", "def test_x(): pass\n")
    return upstream.commit("init (#1)")


def test_python_symbols_top_and_class_level_only():
    names = python_symbols(QWEN3_VL.encode())
    assert names == ["Qwen3VLForConditionalGeneration", "Qwen3VLForConditionalGeneration.get_video_feature",
                     "Qwen3VLForConditionalGeneration.stream", "Qwen3VLForConditionalGeneration.Inner", "helper"]
    assert python_symbols(b"def (:\n") == []


def test_keep_path_filters():
    assert keep_path("sglang", "python/sglang/srt/models/qwen3_vl.py")
    assert not keep_path("sglang", "python/sglang/multimodal_gen/runtime/x.py")
    assert not keep_path("sglang", "sgl-kernel/csrc/a.cu")
    assert not keep_path("sglang", "docs/img/logo.png")
    assert keep_path("unknown-repo", "anything/at/all.py")


def test_list_tree_writes_listing_and_symbols(kb, upstream):
    sha = build_upstream(upstream)
    config = load_config(kb)
    txt, sym, size = list_tree(config, "sglang", str(upstream.path))
    lines = txt.read_text().splitlines()
    assert lines[0].startswith("#") and sha in lines[0]
    paths = [l for l in lines if not l.startswith("#")]
    assert paths == sorted(paths)
    assert "python/sglang/srt/models/qwen3_vl.py" in paths and "docs/basic_usage/qwen3_vl.md" in paths
    assert "test/registered/vlm/test_x.py" in paths
    assert not any("multimodal_gen" in p or p.endswith(".png") or p.startswith("sgl-kernel") for p in paths)
    assert size == len(txt.read_bytes())
    doc = json.loads(sym.read_text())
    assert doc["commit"] == sha
    # family globs (qwen3_vl.py) get symbols; files outside every glob do not
    assert doc["files"]["python/sglang/srt/models/qwen3_vl.py"][1] == "Qwen3VLForConditionalGeneration.get_video_feature"
    assert "test/registered/vlm/test_x.py" not in doc["files"]
    table = load_symbols(kb)["sglang"]["python/sglang/srt/models/qwen3_vl.py"]
    assert {"get_video_feature", "Qwen3VLForConditionalGeneration.get_video_feature"} <= table
    assert "python/sglang/srt/models/qwen3_vl.py" in KnowledgeBase(config).known_files["sglang"]


def test_playbook_files_get_symbols(kb, upstream):
    build_upstream(upstream)
    (kb / "playbook" / "symptoms").mkdir()
    (kb / "playbook" / "symptoms" / "x.yaml").write_text(
        "entries:\n  - id: a\n    look:\n      - {repo: sglang, file: test/registered/vlm/test_x.py}\n")
    _, sym, _ = list_tree(load_config(kb), "sglang", str(upstream.path))
    assert json.loads(sym.read_text())["files"]["test/registered/vlm/test_x.py"] == ["test_x"]


def test_tree_cli_and_errors(kb, upstream, tmp_path):
    build_upstream(upstream)
    runner = CliRunner()
    res = runner.invoke(main, ["tree", "sglang", "--clone", str(upstream.path), "--root", str(kb)])
    assert res.exit_code == 0, res.output
    assert "wrote references/trees/sglang.txt" in res.output
    res = runner.invoke(main, ["tree", "sglang", "--clone", str(tmp_path / "nope"), "--root", str(kb)])
    assert res.exit_code == 2 and "clone not found" in res.output
    res = runner.invoke(main, ["tree", "sglang", "--clone", str(upstream.path), "--ref", "nope", "--root", str(kb)])
    assert res.exit_code == 2 and "not found" in res.output
    res = runner.invoke(main, ["tree", "vllm", "--clone", str(upstream.path), "--root", str(kb)])
    assert res.exit_code == 2 and "unknown repo" in res.output


def test_shipped_listing_is_small_and_dated(repo_root):
    txt = repo_root / "references" / "trees" / "sglang.txt"
    assert txt.stat().st_size < 400 * 1024
    first = txt.read_text().splitlines()[0]
    assert first.startswith("# sglang tree at ") and len(first.split()[4]) == 40

"""Git source and evidence locks, on small repositories built by the tests."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dossier.cli import main
from dossier.config import load_config
from dossier.errors import DossierError
from dossier.evidence import lock_digest
from dossier.fetch import fetch_git
from dossier.sources.git import History, open_clone

from conftest import git


PAD = "import os\n\n\n"


def _seed(up):
    up.write("python/sglang/srt/models/qwen3_vl.py", PAD + "class Vision:\n    def forward(self, x):\n        y = 1\n        z = 2\n        return x\n")
    up.write("python/sglang/srt/managers/mm_utils.py", "def embed(items):\n    return items\n")
    up.write("assets/logo.bin", b"\x00\x01\x02")
    up.write("run.sh", "echo hi\n")
    up.commit("initial import")


def _cli(kb, *args):
    return CliRunner().invoke(main, [*args, "--root", str(kb)])


def test_squash_commit_lock_facts(upstream, kb):
    _seed(upstream)
    upstream.write("python/sglang/srt/models/qwen3_vl.py",
                   PAD + "class Vision:\n    def forward(self, x):\n        y = 1\n        z = 2\n        x = x.to('cuda', non_blocking=True)\n        return x\n")
    sha = upstream.commit("[VLM] faster copy (#101)")
    res = _cli(kb, "fetch", "sglang", "101", "--clone", str(upstream.path))
    assert res.exit_code == 0, res.output
    lock = json.loads((kb / "references/evidence/sglang/101.json").read_text())
    assert lock["title"] == "[VLM] faster copy"
    assert lock["state"] == "merged" and lock["merged"] == "2026-01-02"
    assert lock["source"]["commit"] == sha and lock["source"]["kind"] == "git"
    assert lock["stats"] == {"files": 1, "additions": 1, "deletions": 0, "diff_lines": 5}
    f = lock["files"][0]
    assert f["status"] == "modified" and f["hunks"][0]["section"].startswith("class Vision")
    assert "Vision" in f["symbols"]
    assert lock["lock_sha256"] == lock_digest(lock)
    assert "non_blocking" not in (kb / "references/evidence/sglang/101.json").read_text()  # no code text


def test_merge_commit_uses_first_parent(upstream, kb):
    _seed(upstream)
    upstream.run("checkout", "-q", "-b", "feature")
    upstream.write("python/sglang/srt/managers/mm_utils.py", "def embed(items):\n    return list(items)\n")
    upstream.commit("tweak embed")
    upstream.run("checkout", "-q", "main")
    upstream.write("README.md", "x\n")
    upstream.commit("unrelated")
    git(upstream.path, "merge", "--no-ff", "-q", "feature", "-m", "Merge pull request #7 from someone/feature")
    res = _cli(kb, "fetch", "sglang", "7", "--clone", str(upstream.path))
    assert res.exit_code == 0, res.output
    lock = json.loads((kb / "references/evidence/sglang/7.json").read_text())
    assert [f["path"] for f in lock["files"]] == ["python/sglang/srt/managers/mm_utils.py"]
    assert lock["source"]["ref_kind"] == "merge"


def test_rename_delete_binary_mode_and_non_utf8(upstream, kb):
    _seed(upstream)
    (upstream.path / "python/sglang/srt/multimodal").mkdir(parents=True)
    upstream.run("mv", "python/sglang/srt/managers/mm_utils.py", "python/sglang/srt/multimodal/mm_utils.py")
    upstream.run("rm", "-q", "run.sh")
    upstream.write("assets/logo.bin", b"\x00\x09\x09\x09")
    upstream.write("python/sglang/srt/models/qwen3_vl.py", b"class Vision:\n    def forward(self, x):\n        return x  # \xff\xfe\n")
    upstream.commit("move files (#55)")
    res = _cli(kb, "fetch", "sglang", "55", "--clone", str(upstream.path))
    assert res.exit_code == 0, res.output
    lock = json.loads((kb / "references/evidence/sglang/55.json").read_text())
    by = {f["path"]: f for f in lock["files"]}
    assert by["python/sglang/srt/multimodal/mm_utils.py"]["status"] == "renamed"
    assert by["python/sglang/srt/multimodal/mm_utils.py"]["old_path"] == "python/sglang/srt/managers/mm_utils.py"
    assert by["run.sh"]["status"] == "deleted"
    assert by["assets/logo.bin"]["binary"] is True
    assert lock["non_utf8"] is True


def test_mode_only_and_empty_diff(upstream, kb):
    _seed(upstream)
    (upstream.path / "run.sh").chmod(0o755)
    upstream.commit("make executable (#60)")
    upstream.commit("empty change (#61)")
    res = _cli(kb, "fetch", "sglang", "60", "61", "--clone", str(upstream.path))
    assert res.exit_code == 0, res.output
    mode = json.loads((kb / "references/evidence/sglang/60.json").read_text())
    assert mode["files"][0]["status"] == "mode-changed" and mode["files"][0]["mode_change"]
    empty = json.loads((kb / "references/evidence/sglang/61.json").read_text())
    assert empty["stats"]["files"] == 0 and empty["files"] == []


def test_unmerged_pull_ref_against_merge_base(upstream, kb):
    _seed(upstream)
    base = upstream.run("rev-parse", "HEAD").strip()
    upstream.run("checkout", "-q", "-b", "wip")
    upstream.write("python/sglang/srt/managers/mm_utils.py", "def embed(items):\n    return tuple(items)\n")
    head = upstream.commit("wip: tuple embed")
    upstream.run("checkout", "-q", "main")
    upstream.write("README.md", "later\n")
    upstream.commit("later on main")
    upstream.run("update-ref", "refs/pull/900/head", head)
    res = _cli(kb, "fetch", "sglang", "900", "--clone", str(upstream.path))
    assert res.exit_code == 0, res.output
    lock = json.loads((kb / "references/evidence/sglang/900.json").read_text())
    assert lock["state"] == "open" and lock["merged"] is None
    assert lock["source"]["parent"] == base and lock["source"]["ref_kind"] == "pull-ref"
    assert [f["path"] for f in lock["files"]] == ["python/sglang/srt/managers/mm_utils.py"]


def test_missing_pr_does_not_stop_others(upstream, kb):
    _seed(upstream)
    upstream.write("run.sh", "echo bye\n")
    upstream.commit("script (#5)")
    res = _cli(kb, "fetch", "sglang", "404", "5", "--clone", str(upstream.path))
    assert res.exit_code == 1
    assert "sglang#404: PR #404 not found" in res.output
    assert (kb / "references/evidence/sglang/5.json").exists()


def test_bare_git_directory_without_config(upstream, tmp_path, kb):
    _seed(upstream)
    upstream.write("run.sh", "echo x\n")
    upstream.commit("x (#8)")
    bare = tmp_path / "mirror" / "repo"
    git(tmp_path, "clone", "-q", "--bare", str(upstream.path), str(bare))
    (bare / "config").unlink()  # snapshots arrive without one
    results = fetch_git(load_config(kb), "sglang", [8], str(bare))
    assert results[0].error is None


@pytest.mark.parametrize("args, message", [
    (["fetch", "sglang", "1", "--clone", "/nonexistent/clone"], "clone not found"),
    (["fetch", "../../x", "1", "--clone", "."], "invalid repo name"),
    (["fetch", "sgl/ang", "1", "--clone", "."], "invalid repo name"),
    (["fetch", "sglang", "12a", "--clone", "."], "invalid PR number"),
    (["fetch", "sglang", "0", "--clone", "."], "invalid PR number"),
    (["new", "sglang", "1"], "no evidence lock"),
    (["trace", "qwen3-vl", "--clone", "/nonexistent"], "clone not found"),
])
def test_bad_input_is_one_line_exit_2(kb, args, message):
    res = _cli(kb, *args)
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_non_git_folder(kb, tmp_path):
    (tmp_path / "plain").mkdir()
    res = _cli(kb, "fetch", "sglang", "1", "--clone", str(tmp_path / "plain"))
    assert res.exit_code == 2 and "not a git repository" in res.output


def test_history_finds_latest_landing_first(upstream):
    _seed(upstream)
    upstream.write("run.sh", "1\n")
    upstream.commit("first try (#9)")
    upstream.write("run.sh", "2\n")
    second = upstream.commit("Reland: second try (#9)")
    hist = History(open_clone(upstream.path))
    assert hist.find(9).commit == second
    with pytest.raises(DossierError):
        hist.find(10)


def test_refetch_is_idempotent_and_atomic(upstream, kb):
    _seed(upstream)
    upstream.write("run.sh", "echo 2\n")
    upstream.commit("s (#3)")
    assert _cli(kb, "fetch", "sglang", "3", "--clone", str(upstream.path)).output.startswith("wrote")
    again = _cli(kb, "fetch", "sglang", "3", "--clone", str(upstream.path))
    assert again.output.startswith("unchanged")
    leftovers = [p for p in (kb / "references/evidence/sglang").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_diff_input_that_is_not_a_diff(kb, tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x7fELF\x00\x01binary garbage\n")
    res = _cli(kb, "fetch", "sglang", "5", "--diff", str(junk), "--title", "x")
    assert res.exit_code == 2 and "no unified diff found" in res.output
    assert not (kb / "references/evidence/sglang/5.json").exists()


def test_missing_blob_in_clone_is_recorded_not_fatal(upstream, kb):
    """Snapshots lack large blobs: the PR's other files still lock, the missing one is noted."""
    _seed(upstream)
    upstream.write("tests/data/clip.mp4", b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)))
    upstream.write("run.sh", "echo with clip\n")
    upstream.commit("add video input (#35)")
    blob = upstream.run("rev-parse", "HEAD:tests/data/clip.mp4").strip()
    (upstream.path / ".git/objects" / blob[:2] / blob[2:]).unlink()
    res = _cli(kb, "fetch", "sglang", "35", "--clone", str(upstream.path))
    assert res.exit_code == 0, res.output
    lock = json.loads((kb / "references/evidence/sglang/35.json").read_text())
    by = {f["path"]: f for f in lock["files"]}
    assert by["tests/data/clip.mp4"]["binary"] and by["tests/data/clip.mp4"]["patch"] == "missing-object"
    assert by["run.sh"]["additions"] == 1 and lock["source"]["kind"] == "git"

"""GitHub source: real PyGithub against a stand-in REST server on 127.0.0.1."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dossier.check import run_check
from dossier.cache import content_key
from dossier.cli import main
from dossier.sources import github as github_module
from dossier.config import load_config
from dossier.evidence import file_lines
from dossier.kb import KnowledgeBase
from dossier.fetch import fetch_git
from dossier.sources.github import fetch_github
from github_standin import StandIn, github_files, resp

TOKEN = "ghp_SENTINELtoken0123456789abcdef"
UPSTREAM = "sgl-project/sglang"
SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("DOSSIER_GITHUB_BACKOFF", "0.001")
    monkeypatch.setenv("DOSSIER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    return tmp_path


@pytest.fixture
def server():
    with StandIn() as s:
        yield s


def cli(kb: Path, *args: str, stdin: bytes | None = None):
    return CliRunner().invoke(main, [*args, "--root", str(kb)], input=stdin)


def lock(kb: Path, pr: int, repo: str = "sglang") -> dict:
    return json.loads((kb / "references" / "evidence" / repo / f"{pr}.json").read_text())


def small_pr(server: StandIn, number: int, **fields):
    files = [{"sha": "d" * 40, "filename": "python/sglang/srt/models/qwen3_vl.py", "status": "modified",
              "additions": 1, "deletions": 0, "changes": 1,
              "patch": "@@ -1,2 +1,3 @@ class Vision:\n     def f(self):\n+        return 1\n         pass"}]
    return server.add_pull(UPSTREAM, number, files, **fields)


# --- same lock as the git source ------------------------------------------------


@pytest.fixture
def pr_in_git(upstream):
    """A squash-merged PR #7 touching 38 files: modified, added, deleted, renamed, binary."""
    upstream.write("python/sglang/srt/models/qwen3_vl.py",
                   "import torch\n\n\nclass Vision:\n    def forward(self, x):\n        return x\n")
    upstream.write("python/sglang/srt/old_name.py", "".join(f"line_{i} = {i}\n" for i in range(20)))
    upstream.write("python/sglang/srt/gone.py", "def gone():\n    return 0\n")
    upstream.write("docs/moved_from.md", "# Unchanged text\n")
    upstream.write("assets/logo.bin", bytes(range(256)) * 4)
    upstream.commit("init")
    upstream.write("python/sglang/srt/models/qwen3_vl.py",
                   "import torch\n\n\nclass Vision:\n    def forward(self, x):\n"
                   "        x = x.to(\"cuda\", non_blocking=True)\n        return x\n")
    (upstream.path / "python/sglang/srt/old_name.py").unlink()
    upstream.write("python/sglang/srt/new_name.py",
                   "".join(f"line_{i} = {i}\n" for i in range(19)) + "LINE_19 = 'renamed'\n")
    (upstream.path / "python/sglang/srt/gone.py").unlink()
    (upstream.path / "docs/moved_from.md").rename(upstream.path / "docs/moved_to.md")  # pure rename
    upstream.write("assets/logo.bin", bytes(range(255, -1, -1)) * 4)
    upstream.write("python/sglang/srt/empty.txt", "")
    for i in range(32):
        upstream.write(f"python/sglang/srt/pkg/mod_{i:02d}.py", f"def handler_{i}(req):\n    return {i}\n")
    upstream.commit("Speed up the vision path (#7)")
    base, head = upstream.run("rev-parse", "HEAD~1").strip(), upstream.run("rev-parse", "HEAD").strip()
    diff = upstream.run("diff", "-M", "--full-index", base, head)
    return upstream, github_files(diff), base, head


def test_github_lock_matches_git_lock(env, kb, server, pr_in_git):
    repo, files, base, head = pr_in_git
    assert len(files) == 38  # past one page of 30
    config = load_config(kb)
    [git_res] = fetch_git(config, "sglang", [7], str(repo.path))
    git_lock = lock(kb, 7)
    server.add_pull(UPSTREAM, 7, files, title="Speed up the vision path", head_sha=head, base_sha=base,
                    merge_commit_sha=head)
    [res] = fetch_github(config, "sglang", [7], api_url=server.url)
    assert res.error is None and res.changed
    gh_lock = lock(kb, 7)
    assert server.hits(f"/repos/{UPSTREAM}/pulls/7/files") == 2  # followed the Link header

    assert gh_lock["diff_sha256"] == git_lock["diff_sha256"]
    assert gh_lock["stats"] == git_lock["stats"]
    assert [f["path"] for f in gh_lock["files"]] == [f["path"] for f in git_lock["files"]]
    for g, h in zip(git_lock["files"], gh_lock["files"]):
        assert {k: v for k, v in h.items() if k != "patch"} == g, g["path"]
    by_path = {f["path"]: f for f in gh_lock["files"]}
    assert by_path["python/sglang/srt/new_name.py"]["status"] == "renamed"
    assert by_path["python/sglang/srt/new_name.py"]["old_path"] == "python/sglang/srt/old_name.py"
    assert by_path["assets/logo.bin"]["patch"] == "omitted-binary" and by_path["assets/logo.bin"]["binary"]
    assert by_path["python/sglang/srt/empty.txt"]["status"] == "added"
    assert "patch" not in by_path["python/sglang/srt/empty.txt"]
    assert by_path["python/sglang/srt/gone.py"]["status"] == "deleted"
    assert by_path["docs/moved_to.md"]["status"] == "renamed" and file_lines(by_path["docs/moved_to.md"]) == []
    src = gh_lock["source"]
    assert src["kind"] == "github" and src["head_sha"] == head and src["base_sha"] == base
    assert src["api_url"] == server.url and src["labels"] == ["performance"]
    assert gh_lock["state"] == "merged" and gh_lock["merged"] == "2026-01-03"
    assert gh_lock["created"] == "2026-01-01" and gh_lock["author"] == "octo"


def test_truncated_patch_and_file_list_are_recorded(env, kb, server):
    files = [{"sha": "d" * 40, "filename": "python/sglang/srt/huge.py", "status": "modified",
              "additions": 4000, "deletions": 10, "changes": 4010},
             {"sha": "d" * 40, "filename": "python/sglang/srt/small.py", "status": "modified",
              "additions": 1, "deletions": 0, "changes": 1, "patch": "@@ -1 +1,2 @@\n a = 1\n+b = 2"}]
    server.add_pull(UPSTREAM, 8, files)
    pull = server.routes[f"/repos/{UPSTREAM}/pulls/8"][0].body
    pull["changed_files"] = 3500  # GitHub lists at most 3000
    [res] = fetch_github(load_config(kb), "sglang", [8], api_url=server.url)
    assert res.error is None
    got = lock(kb, 8)
    huge = got["files"][0]
    assert huge["patch"] == "truncated" and huge["additions"] == 4000 and file_lines(huge) == []
    assert got["stats"]["additions"] == 4001  # counts come from GitHub, not the missing text
    assert got["source"]["files_truncated"] is True
    assert got["source"]["files_listed"] == 2 and got["source"]["files_changed"] == 3500


# --- failures ---------------------------------------------------------------------


def test_404_is_one_line_and_other_prs_continue(env, kb, server):
    small_pr(server, 11)
    result = cli(kb, "fetch", "sglang", "404", "11", "--source", "github", "--api-url", server.url)
    assert result.exit_code == 1
    errors = [l for l in result.stderr.splitlines() if l]
    assert len(errors) == 1 and "sgl-project/sglang#404 not found" in errors[0]
    assert "Traceback" not in result.output
    assert (kb / "references/evidence/sglang/11.json").exists()


@pytest.mark.parametrize("first", [
    resp(403, SECONDARY, retry_after=1),
    resp(403, SECONDARY, x_ratelimit_remaining=0, x_ratelimit_reset=int(time.time())),
    resp(502, {"message": "Bad Gateway"}),
    resp(503, {"message": "Service Unavailable"}),
], ids=["secondary-retry-after", "secondary-no-retry-after", "502", "503"])
def test_retries_then_succeeds(env, kb, server, first, monkeypatch):
    small_pr(server, 12)
    path = f"/repos/{UPSTREAM}/pulls/12"
    server.routes[path] = [first, first, *server.routes[path]]
    slept = []
    monkeypatch.setattr(github_module.time, "sleep", slept.append)
    [res] = fetch_github(load_config(kb), "sglang", [12], api_url=server.url)
    assert res.error is None, res.error
    assert server.hits(path) == 3
    assert len(slept) == 2 and all(0 <= s <= 0.1 for s in slept)  # one sleep per retry, scaled by DOSSIER_GITHUB_BACKOFF


def test_retries_on_a_later_page(env, kb, server):
    files = [{"sha": "d" * 40, "filename": f"f{i:02d}.py", "status": "added", "additions": 1, "deletions": 0,
              "changes": 1, "patch": f"@@ -0,0 +1 @@\n+x = {i}"} for i in range(35)]
    server.add_pull(UPSTREAM, 13, files)
    path = f"/repos/{UPSTREAM}/pulls/13/files"
    server.route(path, resp(200), resp(502, {"message": "Bad Gateway"}), resp(200))
    [res] = fetch_github(load_config(kb), "sglang", [13], api_url=server.url)
    assert res.error is None
    assert lock(kb, 13)["stats"]["files"] == 35


def test_server_errors_that_never_stop_fail_that_pr_only(env, kb, server):
    small_pr(server, 14)
    small_pr(server, 15)
    server.route(f"/repos/{UPSTREAM}/pulls/14", resp(502, {"message": "Bad Gateway"}))
    results = fetch_github(load_config(kb), "sglang", [14, 15], api_url=server.url)
    assert "kept failing" in results[0].error
    assert results[1].error is None


def test_exhausted_quota_says_when_it_resets(env, kb, server):
    reset = int(time.time()) + 3600
    server.route(f"/repos/{UPSTREAM}/pulls/16", resp(
        403, {"message": "API rate limit exceeded for 127.0.0.1."},
        x_ratelimit_remaining=0, x_ratelimit_reset=reset))
    result = cli(kb, "fetch", "sglang", "16", "--api-url", server.url)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "rate limit exhausted" in lines[0]
    assert time.strftime("%H:%M", time.gmtime(reset)) in lines[0] and "UTC" in lines[0]


def test_bad_token_is_one_line(env, kb, server):
    server.route(f"/repos/{UPSTREAM}/pulls/17", resp(401, {"message": "Bad credentials"}))
    result = cli(kb, "fetch", "sglang", "17", "--api-url", server.url)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "dossier: error: GitHub rejected GITHUB_TOKEN (401 Bad credentials); fix or unset it"]


# --- token and cache ------------------------------------------------------------------


def _every_file_text(*roots: Path) -> str:
    return "".join(p.read_bytes().decode("utf-8", "replace") for r in roots for p in r.rglob("*") if p.is_file())


def test_token_is_sent_but_never_written_or_printed(env, kb, server):
    small_pr(server, 18)
    server.route(f"/repos/{UPSTREAM}/pulls/19", resp(401, {"message": "Bad credentials"}))
    ok = cli(kb, "fetch", "sglang", "18", "--api-url", server.url)
    bad = cli(kb, "fetch", "sglang", "19", "--api-url", server.url)
    assert ok.exit_code == 0 and bad.exit_code == 2
    assert any(h.get("Authorization") == f"token {TOKEN}" for _, _, h in server.requests)
    assert TOKEN not in ok.output + ok.stderr + bad.output + bad.stderr
    written = _every_file_text(kb, env / "cache")
    assert "18.json" in str(list((kb / "references/evidence/sglang").iterdir()))
    assert TOKEN not in written and "ghp_" not in written


def test_works_without_a_token(env, kb, server, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")
    small_pr(server, 20)
    result = cli(kb, "fetch", "sglang", "20", "--api-url", server.url)
    assert result.exit_code == 0, result.output
    assert all("Authorization" not in h for _, _, h in server.requests)


def test_cache_keeps_diffs_and_refreshes_stale_state(env, kb, server, monkeypatch):
    config = load_config(kb)
    small_pr(server, 21, state="open", merged=False, merged_at=None)
    pull, files = f"/repos/{UPSTREAM}/pulls/21", f"/repos/{UPSTREAM}/pulls/21/files"
    fetch_github(config, "sglang", [21], api_url=server.url)
    assert lock(kb, 21)["state"] == "open"
    stored = json.loads((env / "cache" / "github.json").read_text())
    assert len(stored[content_key("diff", server.url, UPSTREAM, "a" * 40, "b" * 40)]) == 1  # the one file
    assert stored[content_key("meta", server.url, UPSTREAM, 21)]["record"]["head_sha"] == "a" * 40

    fetch_github(config, "sglang", [21], api_url=server.url)  # fresh metadata: no request at all
    assert (server.hits(pull), server.hits(files)) == (1, 1)

    small_pr(server, 21)  # merged upstream since; same head SHA
    fetch_github(config, "sglang", [21], api_url=server.url, max_age_s=0)
    assert (server.hits(pull), server.hits(files)) == (2, 1)  # state re-read, diff from cache
    assert lock(kb, 21)["state"] == "merged"

    monkeypatch.setenv("DOSSIER_GITHUB_MAX_AGE", "0")
    small_pr(server, 21, head_sha="e" * 40)  # new push: the diff is fetched again
    fetch_github(config, "sglang", [21], api_url=server.url)
    assert (server.hits(pull), server.hits(files)) == (3, 2)
    assert lock(kb, 21)["source"]["head_sha"] == "e" * 40


def test_damaged_cache_is_refetched(env, kb, server):
    small_pr(server, 22)
    fetch_github(load_config(kb), "sglang", [22], api_url=server.url)
    for p in (env / "cache").rglob("*.json"):
        p.write_text("{broken")
    [res] = fetch_github(load_config(kb), "sglang", [22], api_url=server.url)
    assert res.error is None and server.hits(f"/repos/{UPSTREAM}/pulls/22") == 2


# --- a github lock grounds a card like a git lock ------------------------------------------

CARD = """---
repo: sglang
pr: 23
title: Speed up the thing
state: merged
merged: 2026-01-03
---

# Speed up the thing

## Key code excerpts

### `python/sglang/srt/models/qwen3_vl.py` `@@ -1,2 +1,3 @@`

```diff
     def f(self):
+        return 1
{extra}```

## Reviewed files

### Runtime

- `python/sglang/srt/models/qwen3_vl.py`
"""


def test_card_rules_verify_excerpts_against_a_github_lock(env, kb, server):
    small_pr(server, 23)
    config = load_config(kb)
    fetch_github(config, "sglang", [23], api_url=server.url)
    card = kb / "references/cards/sglang/23.md"
    card.parent.mkdir(parents=True)
    card.write_text(CARD.format(extra=""))
    assert run_check(KnowledgeBase(config), select=["G001", "G002", "G003", "G004"]) == []
    card.write_text(CARD.format(extra="+        return 2\n"))
    findings = run_check(KnowledgeBase(config), select=["G001"])
    assert [f.code for f in findings] == ["G001"] and findings[0].line == 18


# --- --diff: a saved `gh pr diff` ------------------------------------------------------------

SAVED = (
    b"diff --git a/python/sglang/srt/models/qwen3_asr.py b/python/sglang/srt/models/qwen3_asr.py\n"
    b"index 1111111..2222222 100644\n"
    b"--- a/python/sglang/srt/models/qwen3_asr.py\n"
    b"+++ b/python/sglang/srt/models/qwen3_asr.py\n"
    b"@@ -10,3 +10,4 @@ class Qwen3ASR:\n"
    b"     def forward(self, audio):\n"
    b"+        # caf\xe9 latin-1 comment\n"
    b"         return self.encoder(audio)\n"
    b"     pass\n"
    b"diff --git a/python/sglang/srt/asr_old.py b/python/sglang/srt/asr_new.py\n"
    b"similarity index 91%\n"
    b"rename from python/sglang/srt/asr_old.py\n"
    b"rename to python/sglang/srt/asr_new.py\n"
    b"index 3333333..4444444 100644\n"
    b"--- a/python/sglang/srt/asr_old.py\n"
    b"+++ b/python/sglang/srt/asr_new.py\n"
    b"@@ -1,2 +1,2 @@\n"
    b"-CHUNK_MS = 500\n"
    b"+CHUNK_MS = 320\n"
    b" x = 1\n"
    b"diff --git a/test/data/sample.wav b/test/data/sample.wav\n"
    b"new file mode 100644\n"
    b"index 0000000..5555555\n"
    b"Binary files /dev/null and b/test/data/sample.wav differ\n"
)


@pytest.mark.parametrize("via_stdin", [False, True])
def test_lock_from_saved_diff(env, kb, tmp_path, via_stdin):
    saved = tmp_path / "pr.diff"
    saved.write_bytes(SAVED)
    args = ["fetch", "sglang", "31", "--diff", "-" if via_stdin else str(saved), "--title", "ASR chunking"]
    result = cli(kb, *args, stdin=SAVED if via_stdin else None)
    assert result.exit_code == 0, result.output
    got = lock(kb, 31)
    assert got["source"]["kind"] == "diff" and got["non_utf8"] is True
    files = {f["path"]: f for f in got["files"]}
    assert files["python/sglang/srt/asr_new.py"]["status"] == "renamed"
    assert files["python/sglang/srt/asr_new.py"]["old_path"] == "python/sglang/srt/asr_old.py"
    assert "CHUNK_MS" in files["python/sglang/srt/asr_new.py"]["symbols"]
    assert files["test/data/sample.wav"]["binary"] and files["test/data/sample.wav"]["status"] == "added"
    asr = files["python/sglang/srt/models/qwen3_asr.py"]
    assert asr["additions"] == 1 and len(file_lines(asr)) == 4 and asr["symbols"] == ["Qwen3ASR"]
    assert got["stats"] == {"files": 3, "additions": 2, "deletions": 1, "diff_lines": 7}
    # A re-run with the same bytes changes nothing.
    again = cli(kb, *args, stdin=SAVED if via_stdin else None)
    assert again.output.startswith("unchanged")


def test_saved_diff_that_is_not_a_diff_is_one_line(env, kb, tmp_path):
    result = cli(kb, "fetch", "sglang", "32", "--diff", "-", "--title", "x", stdin=b"   \n")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "empty" in result.stderr
    missing = cli(kb, "fetch", "sglang", "32", "--diff", str(tmp_path / "nope.diff"), "--title", "x")
    assert missing.exit_code == 2 and "nope.diff" in missing.stderr


def test_cli_max_age_controls_metadata_freshness(env, kb, server):
    small_pr(server, 24)
    args = ["fetch", "sglang", "24", "--api-url", server.url]
    assert cli(kb, *args).exit_code == 0
    assert cli(kb, *args).output.startswith("unchanged")
    assert server.hits(f"/repos/{UPSTREAM}/pulls/24") == 1  # second run read the cache
    assert cli(kb, *args, "--max-age", "0").exit_code == 0
    assert server.hits(f"/repos/{UPSTREAM}/pulls/24") == 2
    assert server.hits(f"/repos/{UPSTREAM}/pulls/24/files") == 1  # the diff never goes stale

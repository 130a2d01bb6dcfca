"""`dossier watch` against stand-ins on loopback: a planted new PR and a planted newer release, exit 1;
nothing new, exit 0; a rate limit, a bad token and an unreachable index each one line."""

from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner

from dossier.cli import main
from github_standin import StandIn, pull_payload, resp

VL = "python/sglang/srt/models/qwen3_vl.py"


def _pypi(server, versions=("0.5.23", "0.5.24")):
    releases = {v: [{"filename": f"sglang-{v}-py3-none-any.whl", "upload_time": f"2026-11-0{i + 1}T10:00:00",
                     "yanked": False}] for i, v in enumerate(versions)}
    releases["0.6.0rc1"] = [{"filename": "x.whl", "upload_time": "2026-11-20T00:00:00"}]  # a pre-release: not news
    server.route("/pypi/sglang/json", resp(200, {"info": {"version": versions[-1]}, "releases": releases}))


def _pin(kb, sha, date="2026-08-22"):
    toml = kb / "dossier.toml"
    toml.write_text(toml.read_text().replace(
        'upstream = "sgl-project/sglang"\n',
        f'upstream = "sgl-project/sglang"\npinned = "{sha}"\npinned_date = "{date}"\nrelease = "0.5.23"\n', 1))


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("DOSSIER_GITHUB_BACKOFF", "0.001")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_test")
    with StandIn() as s:
        yield s


def _watch(kb, *args):
    return CliRunner().invoke(main, ["watch", "--skip", "radar", "--format", "json", "--root", str(kb), *args])


def test_watch_from_a_clone_lists_a_new_pr_and_a_newer_release(kb, upstream, server):
    upstream.write(VL, "class Vision:\n    pass\n")
    upstream.commit("init (#1)")
    _pin(kb, upstream.run("rev-parse", "HEAD").strip())
    upstream.write(VL, "class Vision:\n    def forward(self):\n        return 1\n")
    upstream.commit("[VLM] a new fast path (#7)")
    upstream.write("README.md", "docs\n")
    upstream.commit("docs only (#8)")
    _pypi(server)
    res = _watch(kb, "--clone", f"sglang={upstream.path}", "--index-url", server.url)
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    assert [p["pr"] for p in doc["prs"]] == [7] and doc["prs"][0]["families"] == ["qwen3-vl"]
    assert [(r["package"], r["version"], r["date"]) for r in doc["releases"]] == [("sglang", "0.5.24", "2026-11-02")]
    text = CliRunner().invoke(main, ["watch", "--skip", "radar", "--clone", f"sglang={upstream.path}",
                                     "--index-url", server.url, "--root", str(kb)])
    assert text.exit_code == 1 and "new PR  sglang#7" in text.output and "release sglang 0.5.24" in text.output


def test_watch_from_the_github_api_and_nothing_to_do(kb, server):
    _pin(kb, "a" * 40)
    upstream = "sgl-project/sglang"
    pulls = [pull_payload(server.url, upstream, 9, 1, title="[VLM] planted", merged_at="2026-09-01T10:00:00Z"),
             pull_payload(server.url, upstream, 5, 1, title="before the pin", merged_at="2026-08-01T10:00:00Z")]
    server.paged(f"/repos/{upstream}/pulls", pulls)
    server.paged(f"/repos/{upstream}/pulls/9/files", [{"filename": VL, "status": "modified", "additions": 1,
                                                        "deletions": 0, "changes": 1, "sha": "f" * 40}])
    _pypi(server)
    res = _watch(kb, "--api-url", server.url, "--index-url", server.url)
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    assert [p["pr"] for p in doc["prs"]] == [9] and doc["releases"][0]["version"] == "0.5.24"
    assert server.hits(f"/repos/{upstream}/pulls/5/files") == 0  # updated before the pin: the listing stops there
    # a card for #9, and the index at the pinned release: nothing to do
    card = kb / "references/cards/sglang/9.md"
    card.parent.mkdir(parents=True, exist_ok=True)
    card.write_text("---\nrepo: sglang\npr: 9\n---\n")
    _pypi(server, versions=("0.5.23",))
    res = _watch(kb, "--api-url", server.url, "--index-url", server.url)
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["todo"] is False


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_rate_limit_bad_token_and_unreachable_index_are_one_line_each(kb, server):
    _pin(kb, "a" * 40)
    pulls = "/repos/sgl-project/sglang/pulls"
    server.route(pulls, resp(403, {"message": "API rate limit exceeded"}, X_RateLimit_Remaining=0,
                             X_RateLimit_Reset=4102444800))
    res = _watch(kb, "--api-url", server.url, "--skip", "releases")
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1 and "rate limit" in res.stderr
    server.route(pulls, resp(401, {"message": "Bad credentials"}))
    res = _watch(kb, "--api-url", server.url, "--skip", "releases")
    assert res.exit_code == 2 and res.stderr.strip().splitlines() == [
        "dossier: error: GitHub rejected GITHUB_TOKEN (401 Bad credentials); fix or unset it"]
    res = _watch(kb, "--skip", "prs", "--index-url", _closed_port())
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "cannot reach the package index" in res.stderr


def test_a_ref_without_the_pin_is_one_line_and_a_per_repo_ref_reads_its_branch(kb, upstream, server):
    """A fork's branch that does not contain the pin would list the fork's own commits as new
    upstream PRs; watch refuses it in one line. `--ref sglang=BRANCH` reads that branch."""
    upstream.write(VL, "class Vision:\n    pass\n")
    upstream.commit("init (#1)")
    pin = upstream.run("rev-parse", "HEAD").strip()
    _pin(kb, pin)
    upstream.run("checkout", "-q", "-b", "later")
    upstream.write(VL, "class Vision:\n    def forward(self):\n        return 1\n")
    upstream.commit("[VLM] a new fast path (#7)")
    upstream.run("checkout", "-q", "--orphan", "fork")
    upstream.write(VL, "class Fork:\n    pass\n")
    upstream.commit("the fork's own work (#733)")
    res = _watch(kb, "--skip", "releases", "--clone", f"sglang={upstream.path}")
    assert res.exit_code == 2 and "does not contain the pinned" in res.output and "--ref sglang=REF" in res.output
    assert "#733" not in res.output
    res = _watch(kb, "--skip", "releases", "--clone", f"sglang={upstream.path}", "--ref", "sglang=later")
    assert res.exit_code == 1, res.output
    assert [p["pr"] for p in json.loads(res.output)["prs"]] == [7]
    res = _watch(kb, "--skip", "releases", "--clone", f"sglang={upstream.path}", "--ref", "sglang=")
    assert res.exit_code == 2 and "no ref after '='" in res.output

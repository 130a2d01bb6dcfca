"""The CI workflow and the pre-commit hooks call the same commands as .ci/run and scripts/."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import pytest
import yaml

from dossier.cli import main as cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
HOOK_FILES = ["references/cards/sglang/16366.md", "references/evidence/sglang/16366.json",
              "playbook/symptoms/vit.yaml", "playbook/lanes.yaml", "SKILL.md"]
NOT_HOOK_FILES = ["tools/dossier/cli/__init__.py", "tests/test_site.py", "docs/index.md", "mkdocs.yml", "README.md"]


def load(rel: str):
    return yaml.safe_load((ROOT / rel).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def workflow() -> dict:
    return load(".github/workflows/dossier.yml")


def steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def run_lines(workflow: dict) -> list[str]:
    return [line.strip() for job in workflow["jobs"].values() for s in steps(job)
            for line in str(s.get("run", "")).splitlines() if line.strip()]


def exec_target(script: str) -> list[str]:
    """The command a wrapper script execs, e.g. ['./scripts/test'] for .ci/run."""
    text = (ROOT / script).read_text(encoding="utf-8")
    m = re.search(r"^exec (.+)$", text, re.M)
    assert m, f"{script} has no exec line"
    return shlex.split(m.group(1))


def test_workflow_runs_on_push_and_pull_request(workflow):
    triggers = workflow.get("on", workflow.get(True))  # PyYAML reads a bare `on` key as True
    assert "push" in triggers and "pull_request" in triggers


def test_workflow_runs_the_same_test_command_as_ci_run(workflow):
    ci_command = exec_target(".ci/run")
    assert ci_command == ["./scripts/test"]
    assert any(shlex.split(line) == ci_command for line in run_lines(workflow))


def test_workflow_runs_check_with_github_annotations(workflow):
    assert exec_target("scripts/check")[-2:] == ["check", "$@"], "scripts/check passes its arguments on"
    assert any(shlex.split(line) == ["./scripts/check", "--format", "github"] for line in run_lines(workflow))
    formats = next(p for p in cli.commands["check"].params if p.name == "fmt").type.choices
    assert "github" in formats


def test_workflow_builds_the_site_strictly_and_requires_the_browser(workflow):
    lines = run_lines(workflow)
    assert any("mkdocs build" in line and "--strict" in line for line in lines)
    assert any("chromium-driver" in line and "apt-get install" in line for line in lines)
    job = workflow["jobs"]["check"]
    assert job["env"]["DOSSIER_REQUIRE_BROWSER"]
    # the ASR lanes refuse to score WER without espeak-ng: CI installs it and requires its test
    assert any("espeak-ng" in line and "apt-get install" in line for line in lines) and job["env"]["DOSSIER_REQUIRE_ESPEAK"]
    ci_run = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert "espeak-ng" in ci_run and "DOSSIER_REQUIRE_ESPEAK=1" in ci_run
    assert "site" in [s.get("with", {}).get("path") for s in steps(job) if "upload-pages-artifact" in s.get("uses", "")]


def test_deploy_job_publishes_only_from_the_default_branch(workflow):
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "check"
    assert "default_branch" in deploy["if"] and "push" in deploy["if"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in steps(deploy))
    upload = next(s for s in steps(workflow["jobs"]["check"]) if "upload-pages-artifact" in s.get("uses", ""))
    assert upload["if"] == deploy["if"], "the artifact is uploaded exactly when it is deployed"


def test_scripts_the_workflow_calls_exist_and_are_executable(workflow):
    for line in run_lines(workflow):
        first = shlex.split(line)[0]
        if first.startswith("./"):
            path = ROOT / first
            assert path.is_file() and os.access(path, os.X_OK), f"{first} is not an executable script"


def test_published_hook_runs_the_dossier_console_script():
    hooks = {h["id"]: h for h in load(".pre-commit-hooks.yaml")}
    hook = hooks["dossier-check"]
    assert hook["language"] == "python" and hook["pass_filenames"] is False
    program, command = shlex.split(hook["entry"])
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts[program] == "dossier.cli:run"
    assert command in cli.commands
    pattern = re.compile(hook["files"])
    assert all(pattern.search(f) for f in HOOK_FILES)
    assert not any(pattern.search(f) for f in NOT_HOOK_FILES)


def test_local_hook_is_the_published_hook_via_scripts_check():
    published = {h["id"]: h for h in load(".pre-commit-hooks.yaml")}["dossier-check"]
    config = load(".pre-commit-config.yaml")
    local = next(r for r in config["repos"] if r["repo"] == "local")
    hook = next(h for h in local["hooks"] if h["id"] == "dossier-check")
    assert hook["files"] == published["files"] and hook["pass_filenames"] is False
    assert shlex.split(hook["entry"]) == ["./scripts/check"]
    assert exec_target("scripts/check")[0] == ".venv/bin/dossier" and exec_target("scripts/check")[1] == "check"


def test_the_test_command_brings_and_requires_the_upstream_contract():
    bootstrap = (ROOT / "scripts/bootstrap").read_text(encoding="utf-8")
    assert "'.[dev,contract]'" in bootstrap and "--no-deps" in bootstrap and '"$repo==$version"' in bootstrap
    assert "for repo in sglang sglang-omni; do" in bootstrap and '--target ".venv/upstream/$repo-$version"' in bootstrap
    assert 'sha256sum pyproject.toml' in bootstrap  # the pins live there, so a change re-installs
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["dossier"]["contract"]["sglang"] and pyproject["tool"]["dossier"]["contract"]["sglang-omni"]
    assert {r.split("=")[0].rstrip(">") for r in pyproject["project"]["optional-dependencies"]["contract"]} \
        == {"pydantic", "msgspec", "openai"}
    assert "export DOSSIER_REQUIRE_UPSTREAM=1" in (ROOT / "scripts/test").read_text(encoding="utf-8")


def test_a_weekly_workflow_publishes_the_watch_report():
    wf = load(".github/workflows/watch.yml")
    triggers = wf.get("on") or wf.get(True)
    assert triggers["schedule"][0]["cron"].split()[-1] == "1"  # weekly
    steps = wf["jobs"]["watch"]["steps"]
    assert any("dossier watch --format json" in str(s.get("run", "")) for s in steps)
    assert any(str(s.get("uses", "")).startswith("actions/upload-artifact") for s in steps)


def test_the_check_command_installs_only_what_check_needs():
    assert "./scripts/bootstrap check" in (ROOT / "scripts/check").read_text(encoding="utf-8")
    bootstrap = (ROOT / "scripts/bootstrap").read_text(encoding="utf-8")
    check_branch = bootstrap.split('if [ "$mode" = check ]; then', 1)[1].split("fi", 1)[0]
    assert "pip install -q -e .\n" in check_branch and "sglang" not in check_branch
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    core = {re.split(r"[<>=;\s]", r)[0].lower() for r in pyproject["project"]["dependencies"]}
    assert not core & {"pygithub", "jiwer", "websockets"}  # extras: github, lanes
    extras = pyproject["project"]["optional-dependencies"]
    assert "PyGithub>=2.3" in extras["github"] and {"jiwer>=3.0", "websockets>=12.0"} <= set(extras["lanes"])
    assert pyproject["project"]["license"] == {"text": "Apache-2.0"} and (ROOT / "LICENSE").is_file()

"""Where users meet it: root discovery from any directory, and the lean skill install."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from dossier import config as config_mod
from dossier.config import find_root, load_config
from dossier.errors import DossierError

ROOT = Path(__file__).resolve().parents[1]
SKILL = "sglang-qwen-vlm-omni-asr"


def _kb(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "dossier.toml").write_text('[repos.sglang]\nupstream = "sgl-project/sglang"\n')
    return path


def test_installed_skill_wins_for_reading_commands_cwd_for_writing(tmp_path, monkeypatch):
    skill, checkout, prefix = _kb(tmp_path / "skill"), _kb(tmp_path / "checkout"), tmp_path / "venv"
    prefix.mkdir()
    (prefix / config_mod.SKILL_ROOT_MARKER).write_text(f"{skill}\n")
    monkeypatch.setattr(sys, "prefix", str(prefix))
    (checkout / "sub").mkdir()
    monkeypatch.chdir(checkout / "sub")
    assert find_root(prefer_installed=True) == skill.resolve()
    assert find_root() == checkout.resolve()
    monkeypatch.chdir(tmp_path)  # no knowledge base above: the installed skill either way
    assert find_root() == skill.resolve()
    assert load_config(prefer_installed=True).root == skill.resolve()


def test_explicit_root_never_falls_back_to_the_skill(tmp_path, monkeypatch):
    prefix = tmp_path / "venv"
    prefix.mkdir()
    (prefix / config_mod.SKILL_ROOT_MARKER).write_text(str(_kb(tmp_path / "skill")))
    monkeypatch.setattr(sys, "prefix", str(prefix))
    with pytest.raises(DossierError, match="--root / DOSSIER_ROOT"):
        load_config(tmp_path / "empty")


def test_no_knowledge_base_anywhere_says_how_to_get_one(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.setattr(config_mod, "__file__", str(tmp_path / "a" / "b" / "config.py"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DossierError, match="DOSSIER_ROOT.*install-skill"):
        find_root(prefer_installed=True)


def test_the_checkouts_own_command_finds_it_from_elsewhere(tmp_path):
    """An editable install inside a checkout belongs to that checkout (package at <root>/tools/dossier)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    env.pop("DOSSIER_ROOT", None)
    res = subprocess.run([sys.executable, "-c", "from dossier.cli import main; main()", "lanes", "list"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "omni-speech" in res.stdout


def _local_index() -> str | None:
    """A file:// package index pip is configured with, holding setuptools: the install test's only source."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    for url in re.findall(r"file://[^\s'\"]+", out):
        if (Path(url[len("file://"):]) / "setuptools").is_dir():
            return url
    return None


def test_install_skill_into_an_empty_home_then_find_from_anywhere(tmp_path):
    index = _local_index()
    if index is None:
        pytest.skip("no local (file://) package index to build the command from without the network")
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOSSIER_", "PYTHON", "VIRTUAL_ENV"))}
    # build isolation takes setuptools from the local index; the runtime dependencies come from this
    # interpreter's site-packages below, so nothing is downloaded
    env.update(HOME=str(home), DOSSIER_PIP_ARGS=f"--no-deps --index-url {index}")
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "install-skill"), "--harness", "claude"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    skill = home / ".claude" / "skills" / SKILL
    assert sorted(p.name for p in skill.iterdir()) == ["SKILL.md", "dossier.toml", "playbook", "references"]
    assert not [p for p in skill.rglob("*") if p.name in (".git", ".venv", "tests", "site", "__pycache__")]
    command = home / ".local" / "bin" / "dossier"
    assert command.is_symlink()
    run_env = {**env, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    run_env.pop("DOSSIER_PIP_ARGS")
    res = subprocess.run([str(command), "find", "first audio from Qwen3-Omni is slow"], cwd=elsewhere,
                         env=run_env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "omni-speech" in res.stdout
    where = subprocess.run([str(command.resolve().parent / "python"), "-c", "import dossier; print(dossier.__file__)"],
                           env=run_env, capture_output=True, text=True).stdout
    assert str(home) in where  # the installed copy, not this checkout's
    # a second install (Codex) beside the first leaves the first alone
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "install-skill"), "--harness", "codex",
                          "--skill-only"], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert (home / ".codex" / "skills" / SKILL / "SKILL.md").is_file() and (skill / "SKILL.md").is_file()


def test_install_skill_replaces_an_old_symlink_and_rejects_unknown_extras(tmp_path):
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / SKILL).symlink_to(ROOT)  # the old README's `ln -s "$PWD" ...`
    script = [sys.executable, str(ROOT / "scripts" / "install-skill"), "--skill-only"]
    res = subprocess.run([*script, "--dest", str(skills)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert not (skills / SKILL).is_symlink() and (skills / SKILL / "references").is_dir()
    assert (ROOT / "tests").is_dir()  # the checkout it pointed at is untouched
    res = subprocess.run([*script, "--dest", str(ROOT.parent), "--extras", "nope"], capture_output=True, text=True)
    assert res.returncode == 2 and "unknown extra" in res.stderr


def test_a_missing_extra_is_one_line_naming_it(kb, monkeypatch):
    from click.testing import CliRunner

    from dossier import extras
    from dossier.cli import main

    real = extras.importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None if name == "github" else real(name))
    res = CliRunner().invoke(main, ["fetch", "--source", "github", "sglang", "5", "--root", str(kb)])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        "dossier: error: dossier fetch --source github needs PyGithub, which is not installed; install the github "
        "extra: pip install 'sglang-qwen-dossier[github]' (or scripts/install-skill --extras github)"]
    res = CliRunner().invoke(main, ["radar", "--refresh", "--root", str(kb)])
    assert res.exit_code == 2 and "install the github extra" in res.output

"""`dossier build` on a clean clone changes nothing, however dossier is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from dossier.build import inputs_digest
from dossier.config import load_config
from dossier.kb import KnowledgeBase

ROOT = Path(__file__).resolve().parents[1]
DIGEST = "from dossier.build import inputs_digest; from dossier.config import load_config; " \
         "from dossier.kb import KnowledgeBase; import sys; print(inputs_digest(KnowledgeBase(load_config(__import__('pathlib').Path(sys.argv[1])))))"


def test_a_copy_of_the_package_elsewhere_stamps_like_the_checkouts_own(tmp_path):
    """The non-editable case: the package outside the checkout (as a wheel puts it) hashes the same inputs."""
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "tools" / "dossier", site / "dossier", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", DIGEST, str(ROOT)], env=env, capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == inputs_digest(KnowledgeBase(load_config(ROOT)))


def test_build_from_an_outside_package_leaves_a_clean_clone_clean(tmp_path, kb):
    from conftest import git

    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "tools" / "dossier", site / "dossier", ignore=shutil.ignore_patterns("__pycache__"))
    run = [sys.executable, "-c", "from dossier.cli import main; main()", "build", "--root", str(kb)]
    res = subprocess.run(run, env={**os.environ, "PYTHONPATH": str(ROOT / "tools")}, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    git(kb, "init", "-q")
    git(kb, "add", "-A")
    git(kb, "commit", "-qm", "built")
    res = subprocess.run(run, env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "up to date" in res.stdout + res.stderr
    assert git(kb, "status", "--porcelain") == ""

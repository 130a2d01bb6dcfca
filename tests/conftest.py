"""Shared fixtures: tiny git repositories and throwaway knowledge bases (no network)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def git(cwd: Path, *args: str, **kw) -> str:
    env = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@e", "GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z",
           "GIT_COMMITTER_DATE": "2026-01-02T03:04:05Z", "PATH": "/usr/bin:/bin:/usr/local/bin",
           "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env, **kw).stdout.decode()


class UpstreamRepo:
    """A small upstream-like repository with squash and merge commits."""

    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True)
        git(path, "init", "-q", "-b", "main")

    def write(self, rel: str, content: str | bytes) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")

    def commit(self, subject: str) -> str:
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "--allow-empty", "-m", subject)
        return git(self.path, "rev-parse", "HEAD").strip()

    def run(self, *args: str) -> str:
        return git(self.path, *args)


@pytest.fixture
def upstream(tmp_path) -> UpstreamRepo:
    return UpstreamRepo(tmp_path / "upstream")


def registry_without_pins() -> str:
    """The shipped registry minus the upstream and release pins and former paths: test repositories
    have neither those SHAs nor those PRs (tests of pins and former paths add their own)."""
    text = (ROOT / "dossier.toml").read_text(encoding="utf-8")
    text = text.split("\n# Former paths:", 1)[0] + "\n"
    return "\n".join(l for l in text.splitlines() if not l.startswith(("pinned", "release"))) + "\n"


@pytest.fixture
def kb(tmp_path) -> Path:
    """An empty knowledge base with the shipped registry and lane registry."""
    root = tmp_path / "kb"
    root.mkdir()
    (root / "dossier.toml").write_text(registry_without_pins())
    (root / "playbook").mkdir()
    shutil.copy(ROOT / "playbook" / "lanes.yaml", root / "playbook" / "lanes.yaml")
    # the scripts the registry names, so lane rules (L011/L012) see a coherent knowledge base
    shutil.copytree(ROOT / "playbook" / "lanes", root / "playbook" / "lanes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def tiny_site(tmp_path_factory) -> tuple[Path, Path]:
    """(knowledge base, built site) of site_harness's one-card knowledge base plus its broken cards:
    one `mkdocs build --strict` for the site and browser tests of a worker."""
    from site_harness import add_broken_cards, build_site, make_site_kb

    base = tmp_path_factory.mktemp("tiny")
    root = make_site_kb(base / "kb")
    add_broken_cards(root)
    res = build_site(root, base / "site")
    assert res.returncode == 0, res.stderr[-3000:]
    return root, base / "site"

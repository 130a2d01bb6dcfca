"""Shared fixtures: tiny git repositories and throwaway knowledge bases (no network)."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# --- No test reaches past loopback -----------------------------------------------------------
# Stand-ins for GitHub, the package index and OpenAI-style servers listen on 127.0.0.1; any
# other address is a test that would pass or fail on the network's mood. In this process a
# connection elsewhere (or a lookup of a name other than localhost) raises at once; in the
# subprocesses tests start (`dossier`, lane scripts, git), HTTP goes through a proxy address
# that refuses, except for loopback.

class NetworkBlocked(OSError):
    pass


_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _loopback(host) -> bool:
    host = host.decode() if isinstance(host, bytes) else str(host)
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


_real_connect, _real_connect_ex, _real_getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo


def _checked(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        raise NetworkBlocked(f"tests do not reach the network: connect to {address[0]!r}")


def _connect(self, address):
    _checked(self, address)
    return _real_connect(self, address)


def _connect_ex(self, address):
    _checked(self, address)
    return _real_connect_ex(self, address)


def _getaddrinfo(host, *args, **kwargs):
    if host is not None and not _loopback(host):
        raise NetworkBlocked(f"tests do not reach the network: look up {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True, scope="session")
def no_network():
    patches = [(socket.socket, "connect", _connect), (socket.socket, "connect_ex", _connect_ex),
               (socket, "getaddrinfo", _getaddrinfo)]
    saved_env = {k: os.environ.get(k) for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                                                "no_proxy", "NO_PROXY")}
    for owner, name, func in patches:
        setattr(owner, name, func)
    refused = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection is refused at once
    os.environ.update(http_proxy=refused, https_proxy=refused, HTTP_PROXY=refused, HTTPS_PROXY=refused,
                      no_proxy="127.0.0.1,localhost,::1", NO_PROXY="127.0.0.1,localhost,::1")
    yield
    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = (
        _real_connect, _real_connect_ex, _real_getaddrinfo)
    for key, value in saved_env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


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

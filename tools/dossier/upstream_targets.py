"""The upstream versions a lane is checked against: the installed release wheels and the pinned commits.

A release (sglang, sglang-omni; the versions in pyproject.toml [tool.dossier.contract]) is
the wheel scripts/bootstrap installed with --no-deps outside site-packages: its request
models are imported for real, without running the package's `__init__.py` (which needs
torch), by registering empty parent packages; its other files are read as AST facts. A
pinned commit is the facts `dossier tree` stored in references/trees/<repo>.contract.json.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import types
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import upstream_facts
from .errors import DossierError
from .upstream_types import Schema

_PACKAGES = ("sglang", "sglang.srt", "sglang.srt.entrypoints", "sglang.srt.entrypoints.openai",
             "sglang.srt.entrypoints.openai.realtime", "sglang.api", "sglang.api.v1")
_ENV_NAME = re.compile(r"\b(SGLANG_[A-Z0-9_]+)\b")


class ReleaseMissing(DossierError):
    """A wheel the contract names is not installed (run ./scripts/bootstrap)."""


RELEASE_REPOS = ("sglang", "sglang-omni")  # the keys of [tool.dossier.contract]


def release_version(root: Path, repo: str = "sglang") -> str:
    """The release of `repo` pinned in pyproject.toml ([tool.dossier.contract] sglang / sglang-omni)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    try:
        with open(root / "pyproject.toml", "rb") as fh:
            return str(tomllib.load(fh)["tool"]["dossier"]["contract"][repo])
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise DossierError(f"pyproject.toml: no [tool.dossier.contract] {repo} version ({exc})") from None


def release_folder(version: str, repo: str = "sglang") -> Path:
    """Where scripts/bootstrap put the wheel: .venv/upstream/<repo>-<version> of this interpreter
    (DOSSIER_UPSTREAM_SGLANG / DOSSIER_UPSTREAM_SGLANG_OMNI name another folder)."""
    override = os.environ.get("DOSSIER_UPSTREAM_" + repo.upper().replace("-", "_"))
    return Path(override) if override else Path(sys.prefix) / "upstream" / f"{repo}-{version}"


def installed_release(root: Path, repo: str) -> "Target":
    """The release of `repo` that pyproject.toml pins, as installed by scripts/bootstrap (ReleaseMissing if not)."""
    version = release_version(root, repo)
    return load_release(str(release_folder(version, repo)), repo)


# ------------------------------------------------------------------------------- targets


@dataclass
class Target:
    repo: str                 # sglang | sglang-omni
    version: str              # a release ("0.5.23") or the pinned commit
    pinned: bool
    facts: dict
    env: set[str] = field(default_factory=set)
    modules: dict = field(default_factory=dict)  # the release's imported protocol modules

    @property
    def label(self) -> str:
        return f"{self.repo} pinned {self.version[:12]}" if self.pinned else f"{self.repo} {self.version}"

    def schema(self, path: str) -> Schema:
        return Schema(self.facts.get("models", {}).get(path, {}))


def _reader(folder: Path):
    def read(path: str) -> str | None:
        file = folder / path.removeprefix("python/")
        return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None
    return read


def _import_protocols(folder: Path) -> dict:
    """protocol.py, realtime/protocol.py and api_types.py of the wheel, with no sglang/__init__.py run."""
    current = sys.modules.get("sglang")
    if current is not None and getattr(current, "__dossier_contract__", None) != str(folder):
        raise DossierError(f"another sglang package is already imported ({getattr(current, '__file__', '?')})")
    for name in _PACKAGES:
        module = types.ModuleType(name)
        module.__path__ = [str(folder / name.replace(".", "/"))]
        module.__dossier_contract__ = str(folder)
        sys.modules[name] = module
    # protocol.py imports one helper from sglang/utils.py, whose own imports (numpy, IPython,
    # requests, sglang.srt.environ) the contract does not need: a stub module holds that helper.
    utils = types.ModuleType("sglang.utils")
    utils.convert_json_schema_to_str = lambda schema: schema if isinstance(schema, str) else json.dumps(schema)
    sys.modules["sglang.utils"] = utils
    names = {"protocol": "sglang.srt.entrypoints.openai.protocol",
             "realtime": "sglang.srt.entrypoints.openai.realtime.protocol", "api_types": "sglang.api.v1.api_types"}
    try:
        return {key: importlib.import_module(name) for key, name in names.items()}
    except ImportError as exc:
        raise DossierError(f"cannot import sglang's protocol modules from {folder}: {exc} "
                           "(./scripts/bootstrap installs the contract extra)") from None


def _import_omni_protocols(folder: Path) -> dict:
    """sglang_omni/serve/protocol.py of the wheel (it needs only pydantic and client/types.py), no __init__ run."""
    current = sys.modules.get("sglang_omni")
    if current is not None and getattr(current, "__dossier_contract__", None) != str(folder):
        raise DossierError(f"another sglang_omni package is already imported ({getattr(current, '__file__', '?')})")
    for name in ("sglang_omni", "sglang_omni.client", "sglang_omni.serve"):
        module = types.ModuleType(name)
        module.__path__ = [str(folder / name.replace(".", "/"))]
        module.__dossier_contract__ = str(folder)
        sys.modules[name] = module
    try:
        return {"protocol": importlib.import_module("sglang_omni.serve.protocol")}
    except ImportError as exc:
        raise DossierError(f"cannot import sglang-omni's protocol module from {folder}: {exc} "
                           "(./scripts/bootstrap installs the contract extra)") from None


def _load_omni_release(base: Path) -> Target:
    dist = sorted(base.glob("sglang_omni-*.dist-info"))
    if not (base / "sglang_omni" / "serve" / "protocol.py").is_file() or not dist:
        raise ReleaseMissing(f"no sglang-omni wheel at {base}: run ./scripts/bootstrap")
    version = dist[-1].name[len("sglang_omni-"):-len(".dist-info")]
    read = _reader(base)
    return Target("sglang-omni", version, False, upstream_facts.omni_contract(read), set(), _import_omni_protocols(base))


@lru_cache(maxsize=None)
def load_release(folder: str, repo: str = "sglang") -> Target:
    """The installed release as a target: its real request models plus AST facts of its other files."""
    base = Path(folder)
    if repo == "sglang-omni":
        return _load_omni_release(base)
    dist = sorted(base.glob("sglang-*.dist-info"))
    if not (base / "sglang" / "srt").is_dir() or not dist:
        raise ReleaseMissing(f"no sglang wheel at {base}: run ./scripts/bootstrap")
    version = dist[-1].name[len("sglang-"):-len(".dist-info")]
    read = _reader(base)
    paths = ["python/" + p.relative_to(base).as_posix()
             for p in (base / "sglang/srt/arg_groups/fields").glob("*.py")]
    facts = upstream_facts.sglang_contract(read, paths)
    env = set(_ENV_NAME.findall(read("python/sglang/srt/environ.py") or ""))
    return Target("sglang", version, False, facts, env, _import_protocols(base))


def load_pinned(root: Path, repo: str) -> Target:
    """A pinned commit as a target, from references/trees/<repo>.contract.json (and its env listing)."""
    from .trees import contract_path, pinned_names

    path = contract_path(root, repo)
    try:
        facts = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DossierError(f"{path.relative_to(root)}: unreadable ({exc}); run `dossier tree {repo} --clone PATH`") from None
    env = pinned_names(root)[1] if repo == "sglang" else set()
    return Target(repo, facts["commit"], True, facts, env)

"""The registry: upstream repos by short name, families and their file globs."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .errors import DossierError

CONFIG_NAME = "dossier.toml"
_REPO_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Repo:
    name: str
    upstream: str
    default_branch: str = "main"
    pinned: str | None = None  # upstream SHA the knowledge base is current to ("as of")
    pinned_date: str | None = None
    pinned_pr: int | None = None  # the PR that commit landed
    release: str | None = None  # the newest release on the package index: the second "as of"
    release_date: str | None = None
    package: str | None = None  # its name on the package index

    @property
    def as_of(self) -> str:
        """'sgl-project/sglang main at 3c69a4c74452 (#35974, 2026-08-22)', or '' when not pinned."""
        if not self.pinned:
            return ""
        pr = f"#{self.pinned_pr}, " if self.pinned_pr else ""
        return f"{self.upstream} {self.default_branch} at {self.pinned[:12]} ({pr}{self.pinned_date or '?'})"

    def pr_url(self, pr: int) -> str:
        return f"https://github.com/{self.upstream}/pull/{pr}"


@dataclass(frozen=True)
class FormerPaths:
    """Paths a family's code lived under before a rename or split, up to the PR that moved it.

    A commit counts for the family through these paths only if it landed at or before
    `until` (that PR's commit included: it touched both the old and the new path).
    """
    repo: str
    globs: tuple[str, ...]
    until: int
    note: str = ""
    # For a file that was split: only commits whose hunks (header or changed lines) name one
    # of these count, i.e. those that touched the part that moved into the lane file.
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    globs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    former: tuple[FormerPaths, ...] = ()

    def matches(self, repo: str, path: str) -> bool:
        return any(glob_match(path, g) for g in self.globs.get(repo, ()))

    def former_for(self, repo: str, path: str, active: set[int]) -> list[FormerPaths]:
        """This family's former-path entries that `path` falls under, for a commit at or before their `until`."""
        return [f for f in self.former
                if f.repo == repo and f.until in active and any(glob_match(path, g) for g in f.globs)]


@lru_cache(maxsize=4096)
def glob_regex(pattern: str) -> re.Pattern[str]:
    # '**' spans folders, '*' stays inside one; fnmatch alone lets '*' cross '/'.
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/\\n]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/\\n]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def glob_match(path: str, pattern: str) -> bool:
    return bool(glob_regex(pattern).match(path))


@dataclass
class Config:
    root: Path
    repos: dict[str, Repo]
    families: dict[str, Family]
    radar_max_age_days: int = 30  # [radar] max_age_days: older radar checks are stale (R003)

    @property
    def cards_dir(self) -> Path:
        return self.root / "references" / "cards"

    @property
    def evidence_dir(self) -> Path:
        return self.root / "references" / "evidence"

    @property
    def references_dir(self) -> Path:
        return self.root / "references"

    @property
    def playbook_dir(self) -> Path:
        return self.root / "playbook"

    def repo(self, name: str) -> Repo:
        check_repo_name(name)
        try:
            return self.repos[name]
        except KeyError:
            known = ", ".join(sorted(self.repos))
            raise DossierError(f"unknown repo {name!r} (known: {known})") from None

    def card_path(self, repo: str, pr: int) -> Path:
        check_repo_name(repo)
        return self.cards_dir / repo / f"{pr}.md"

    def lock_path(self, repo: str, pr: int) -> Path:
        check_repo_name(repo)
        return self.evidence_dir / repo / f"{pr}.json"

    @property
    def as_of(self) -> str:
        """One line naming the upstream commit each pinned repo is current to."""
        pins = [r.as_of for r in self.repos.values() if r.pinned]
        return ("As of " + "; ".join(pins) + ".") if pins else "Not pinned to an upstream commit."

    def families_for(self, repo: str, paths) -> list[str]:
        return [f.name for f in self.families.values() if any(f.matches(repo, p) for p in paths)]


def check_repo_name(name: str) -> str:
    """Reject names that could escape the references tree (`../x`, `a/b`)."""
    if not _REPO_NAME.match(name or "") or ".." in name:
        raise DossierError(f"invalid repo name {name!r}: use a short registry name like 'sglang'")
    return name


def parse_pr_number(text) -> int:
    try:
        value = int(str(text).lstrip("#"))
    except ValueError:
        raise DossierError(f"invalid PR number {text!r}: expected a positive integer") from None
    if value <= 0:
        raise DossierError(f"invalid PR number {text!r}: expected a positive integer")
    return value


# Written by scripts/install-skill into the environment the `dossier` command runs from: the
# skill folder that command belongs to, so it finds its knowledge base from any directory.
SKILL_ROOT_MARKER = "dossier-skill-root"


def _has_config(folder: Path | None) -> bool:
    return folder is not None and (folder / CONFIG_NAME).is_file()


def installed_root() -> Path | None:
    """The skill folder the running `dossier` belongs to, or None.

    An installed skill leaves a marker in its environment; an editable install inside a
    checkout belongs to that checkout (the package lives at <root>/tools/dossier).
    """
    marker = Path(sys.prefix) / SKILL_ROOT_MARKER
    try:
        folder = Path(marker.read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError):
        folder = None
    if _has_config(folder):
        return folder.resolve()
    checkout = Path(__file__).resolve().parents[2]
    return checkout if _has_config(checkout) else None


def _cwd_root(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    return next((c for c in (here, *here.parents) if _has_config(c)), None)


def find_root(start: Path | None = None, *, prefer_installed: bool = False) -> Path:
    """The knowledge base to use when no --root or DOSSIER_ROOT names one.

    Reading commands (find, lanes, radar, trace, repro) prefer the skill folder the command
    belongs to, so they work from the user's own checkout; writing commands (check, build,
    fetch, new, ...) prefer the working directory's parents, so a contributor edits the
    checkout they stand in.
    """
    order = (installed_root, lambda: _cwd_root(start)) if prefer_installed else (lambda: _cwd_root(start), installed_root)
    for candidate in order:
        found = candidate()
        if found is not None:
            return found
    here = (start or Path.cwd()).resolve()
    raise DossierError(f"no {CONFIG_NAME} found in {here} or any parent, and no installed skill: "
                       "set DOSSIER_ROOT, pass --root, or install the skill (scripts/install-skill)")


def load_config(root: Path | None = None, *, prefer_installed: bool = False) -> Config:
    if root is None:
        root = find_root(prefer_installed=prefer_installed)
    else:  # --root or DOSSIER_ROOT: that folder or one above it, never an installed skill instead
        found = _cwd_root(root)
        if found is None:
            raise DossierError(f"no {CONFIG_NAME} found in {root.resolve()} or any parent (--root / DOSSIER_ROOT)")
        root = found
    path = root / CONFIG_NAME
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DossierError(f"{path}: {exc}") from None
    repos = {}
    for name, spec in data.get("repos", {}).items():
        check_repo_name(name)
        pinned = spec.get("pinned")
        if pinned is not None and not re.fullmatch(r"[0-9a-f]{40}", str(pinned)):
            raise DossierError(f"{path}: repos.{name}.pinned must be a full 40-hex upstream SHA")
        release = spec.get("release")
        if release is not None and not re.fullmatch(r"\d+(\.\d+)+(\.post\d+|rc\d+)?", str(release)):
            raise DossierError(f"{path}: repos.{name}.release must be a version such as 0.5.23, got {release!r}")
        repos[name] = Repo(name, spec["upstream"], spec.get("default_branch", "main"), pinned,
                           str(spec["pinned_date"]) if spec.get("pinned_date") else None, spec.get("pinned_pr"),
                           str(release) if release else None,
                           str(spec["release_date"]) if spec.get("release_date") else None,
                           spec.get("package") or name)
    families = {}
    for name, spec in data.get("families", {}).items():
        globs = {r: tuple(g) for r, g in spec.get("globs", {}).items()}
        for r in globs:
            if r not in repos:
                raise DossierError(f"{path}: family {name} names unknown repo {r!r}")
        former = []
        for entry in spec.get("former", []):
            if entry.get("repo") not in repos or not isinstance(entry.get("until"), int) or not entry.get("paths"):
                raise DossierError(f"{path}: families.{name}.former needs repo (registered), paths and until (a PR number)")
            former.append(FormerPaths(entry["repo"], tuple(entry["paths"]), entry["until"], entry.get("note", ""),
                                      tuple(entry.get("symbols", ()))))
        families[name] = Family(name, spec.get("title", name), globs, tuple(former))
    max_age = (data.get("radar") or {}).get("max_age_days", 30)
    if not isinstance(max_age, int) or isinstance(max_age, bool) or max_age < 1:
        raise DossierError(f"{CONFIG_NAME}: [radar] max_age_days must be a positive integer, got {max_age!r}")
    return Config(root, repos, families, max_age)

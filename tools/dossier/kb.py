"""The one model of the knowledge base: every input parsed once, shared by rules, build, site and find."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from .cards import MAX_CARD_BYTES, Card, parse_card
from .config import Config
from .errors import DossierError
from .evidence import load_lock, parse_lock
from .fsio import MAX_READ_BYTES, read_text, refuse_outside
from .lane_queries import LaneQueries

TREES_DIR = "references/trees"


def _sorted_paths(paths) -> list[Path]:
    """sorted(paths): Paths sort by their parts, compared once each instead of per comparison."""
    return sorted(paths, key=lambda p: p.parts)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


@dataclass
class KnowledgeBase(LaneQueries):
    config: Config
    card_paths: list[Path] | None = None  # None: every card
    sources: dict[str, str] = field(default_factory=dict)  # repo -> clone path for --source
    histories: dict = field(default_factory=dict)  # repo -> sources.git.History, opened on demand
    digests: dict = field(default_factory=dict)  # id(lock) -> lock_digest, see lock_sha
    locks: dict = field(default_factory=dict)  # (repo, pr) -> (lock, error), see lock_for
    lock_texts: dict = field(default_factory=dict)  # lock path -> its text as lock_for read it (B001 hashes it)
    card_locks: dict = field(default_factory=dict)  # card path -> card_lock's answer
    file_indexes: dict = field(default_factory=dict)  # id(lock) -> evidence.file_index, see lock_files
    rel_paths: dict = field(default_factory=dict)  # Path -> root-relative text, see rel
    fresh_locks: dict = field(default_factory=dict)  # (repo, pr) -> (lock, error) rebuilt from --source
    resolved_dirs: dict = field(default_factory=dict)  # folder -> its resolved path (rel, _plain_text)
    inside_dirs: dict = field(default_factory=dict)  # folder -> whether it resolves inside the root (_plain_text)

    @property
    def root(self) -> Path:
        return self.config.root

    def _resolved(self, folder: Path) -> Path:
        if folder not in self.resolved_dirs:
            self.resolved_dirs[folder] = folder.resolve()
        return self.resolved_dirs[folder]

    def _inside(self, folder: Path) -> bool:
        """Whether `folder` resolves inside the root; asked once per folder (a few hold every card and lock)."""
        if folder not in self.inside_dirs:
            self.inside_dirs[folder] = self._resolved(folder).is_relative_to(self._resolved(self.root))
        return self.inside_dirs[folder]

    def rel(self, path: Path) -> str:
        if path not in self.rel_paths:
            try:  # the folder resolved, not the file: a symlinked card is named as itself
                self.rel_paths[path] = str((self._resolved(path.parent) / path.name).relative_to(self.root))
            except ValueError:
                self.rel_paths[path] = str(path)
        return self.rel_paths[path]

    def _plain_text(self, path: Path, info: os.stat_result | None) -> str:
        """`fsio.read_text(path, root)` with one lstat (`info`) and each folder resolved once.

        A regular file (so no symlink) whose folder resolves inside the root resolves inside
        it too; every other case (a link, a missing or odd file, a folder outside, bad UTF-8)
        goes to `read_text`, so its error line stays the one reader's.
        """
        if (info is not None and stat.S_ISREG(info.st_mode) and info.st_size <= MAX_READ_BYTES
                and self._inside(path.parent)):
            try:
                return path.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                pass
        return read_text(path, self.root)

    def all_card_paths(self) -> list[Path]:
        return _sorted_paths(self.config.cards_dir.glob("*/*.md"))

    def _read_cards(self, paths: list[Path]) -> tuple[list[Card], list[tuple[Path, str]]]:
        cards, unreadable = [], []
        for path in paths:
            try:
                info = _lstat(path)
                size = info.st_size if info is not None and stat.S_ISREG(info.st_mode) else 0
                if size > MAX_CARD_BYTES:
                    raise DossierError(f"{path}: {size:,} bytes; a card is at most {MAX_CARD_BYTES:,}")
                text = self._plain_text(path, info)
            except DossierError as exc:
                unreadable.append((path, str(exc).split(": ", 1)[-1]))
                continue
            cards.append(parse_card(path, text))
        return cards, unreadable

    @cached_property
    def all_loaded(self) -> tuple[list[Card], list[tuple[Path, str]]]:
        """(every card in the tree, (path, why) of each card that cannot be read)."""
        return self._read_cards(self.all_card_paths())

    @cached_property
    def loaded(self) -> tuple[list[Card], list[tuple[Path, str]]]:
        """The cards being checked (PATHS, or all) and the unreadable ones among them."""
        return self.all_loaded if self.card_paths is None else self._read_cards(self.card_paths)

    @property
    def cards(self) -> list[Card]:
        return self.loaded[0]

    @property
    def all_cards(self) -> list[Card]:
        """Every readable card in the tree, for cross-card rules even when checking a subset."""
        return self.all_loaded[0]

    def card_id(self, card: Card) -> str:
        return card.cid

    @cached_property
    def card_ids(self) -> set[str]:
        """`repo/pr` of every card file, readable or not (the cards as loaded: no second listing)."""
        cards, unreadable = self.all_loaded
        return {c.cid for c in cards} | {f"{p.parent.name}/{p.stem}" for p, _ in unreadable}

    def lock_for(self, repo: str, pr: int) -> tuple[dict | None, str | None]:
        """(lock, error) for a card; read once."""
        key = (repo, pr)
        if key not in self.locks:
            path = self.config.lock_path(repo, pr)
            info = _lstat(path)
            if info is None or (not stat.S_ISLNK(info.st_mode) and not path.exists()):
                self.locks[key] = (None, f"no evidence lock at {self.rel(path)}; run `dossier fetch {repo} {pr}`")
            elif stat.S_ISREG(info.st_mode):
                try:  # refuse_outside + load_lock, reading the file once
                    text = self.lock_texts[path] = self._plain_text(path, info)
                    self.locks[key] = (parse_lock(text, path), None)
                except DossierError as exc:
                    self.locks[key] = (None, str(exc))
            else:
                try:
                    refuse_outside(path, self.root)
                    self.locks[key] = (load_lock(path), None)
                except DossierError as exc:
                    self.locks[key] = (None, str(exc))
        return self.locks[key]

    def card_lock(self, card: Card) -> dict | None:
        """The card's lock, or None; kept per card path, as a dozen rules ask for it on every card."""
        try:
            return self.card_locks[card.path]
        except KeyError:
            pass
        repo, stem = card.path.parent.name, card.path.stem
        lock = self.lock_for(repo, int(stem))[0] if stem.isdigit() else None
        self.card_locks[card.path] = lock
        return lock

    def lock_files(self, lock: dict) -> dict[str, dict]:
        """evidence.file_index of a loaded lock, built once per check (G001, G002, G003 need it)."""
        from .evidence import file_index

        key = id(lock)
        if key not in self.file_indexes:
            self.file_indexes[key] = file_index(lock)
        return self.file_indexes[key]

    def history(self, repo: str):
        """The --source clone's history for `repo`, opened once per check."""
        from .sources.git import History, open_clone

        if repo not in self.histories:
            self.histories[repo] = History(open_clone(self.sources[repo]))
        return self.histories[repo]

    def names_in_clone(self, repo: str, lock: dict, path: str) -> list[str] | None:
        """Names `path` defines at the lock's commit, read from the --source clone; None without one."""
        if repo not in self.sources or not lock.get("source", {}).get("commit"):
            return None
        from .evidence import defined_names

        blob = self.history(repo).file_at(lock["source"]["commit"], path)
        return defined_names(blob.decode("utf-8", "surrogateescape")) if blob is not None else []

    @cached_property
    def measurement_records(self) -> dict:
        """subject -> (path, record, error) of references/measurements, read once per check."""
        from .measurements import records

        return records(self.root)

    @cached_property
    def repro_scripts(self) -> list:
        """playbook/repros scripts, each parsed once per check (M002 and M006 both read them)."""
        from .measurements import scripts

        return scripts(self.root)

    def lock_sha(self, lock: dict) -> str:
        """lock_digest of a loaded lock, computed once per check (G004 and B002 both need it)."""
        from .evidence import lock_digest

        key = id(lock)
        if key not in self.digests:
            self.digests[key] = lock_digest(lock)
        return self.digests[key]

    @cached_property
    def all_locks(self) -> dict[tuple[str, int], dict]:
        out = {}
        for path in _sorted_paths(self.config.evidence_dir.glob("*/*.json")):
            if path.stem.isdigit():
                lock, _ = self.lock_for(path.parent.name, int(path.stem))
                if lock:
                    out[(path.parent.name, int(path.stem))] = lock
        return out

    def fresh_lock(self, repo: str, pr: int, known: str | None = None) -> tuple[dict | None, str | None]:
        """The lock rebuilt from the --source clone (G005 compares it with the stored one);
        `known`, the stored lock's commit, is looked up where the clone's HEAD lacks the PR."""
        from .fetch import lock_from_git

        key = (repo, pr)
        if key not in self.fresh_locks:
            try:
                self.fresh_locks[key] = (lock_from_git(self.config, repo, self.history(repo), pr, known), None)
            except DossierError as exc:
                self.fresh_locks[key] = (None, str(exc))
        return self.fresh_locks[key]

    # --- the hand-written inputs beside the cards ------------------------------------

    @cached_property
    def playbook(self):
        """Every playbook entry (with lines) and the problems found reading them."""
        from . import playbook

        return playbook.load(self.root)

    @cached_property
    def playbook_ids(self) -> set[str]:
        return {e["id"] for e in self.playbook.entries if "id" in e}

    @cached_property
    def pinned_symbols(self) -> dict[str, dict[str, set[str]]]:
        """Per repo, per file: the symbol names of the tree listings at the pinned SHA only."""
        from .trees import load_symbols

        return load_symbols(self.root)

    @cached_property
    def radar(self):
        """references/radar.yaml with lines and problems; None when there is none."""
        from . import radar

        return radar.load(self.root, self.config.repos)

    @cached_property
    def exclusions_doc(self):
        """(trace-exclusions as written or None, (line, problem) or None)."""
        from .trace import read_exclusions
        from .yamlio import YamlError

        try:
            return read_exclusions(self.root), None
        except YamlError as exc:
            return None, (exc.line, f"invalid YAML: {exc.problem}")
        except DossierError as exc:
            return None, (1, str(exc))

    @cached_property
    def exclusions(self) -> dict:
        """(repo, pr or commit prefix) -> reason."""
        from .trace import load_exclusions

        data, _ = self.exclusions_doc
        return load_exclusions(self.root, data) if data is not None else {}

    # --- generated and measured facts ------------------------------------------------

    @cached_property
    def supersession(self) -> dict:
        """references/supersession.json: what later PRs removed or rewrote each card's lines."""
        from . import supersede

        return supersede.load(self.root)

    @cached_property
    def release(self) -> dict | None:
        """The newest sglang release's paths, flags and env vars (references/trees), if listed."""
        return self.releases.get("sglang")

    @cached_property
    def releases(self) -> dict[str, dict | None]:
        """Per repo: its newest release's listing (references/trees/<repo>-release.json), or None."""
        from . import release

        return {repo: release.load(self.root, repo) for repo in self.config.repos}

    @cached_property
    def pinned_names(self) -> tuple[set[str], set[str]] | None:
        """(flags, env vars) sglang has at the pinned SHA; None when not listed."""
        from .trees import pinned_names

        names = pinned_names(self.root)
        return names if names[0] else None

    @cached_property
    def pinned_paths(self) -> dict[str, set[str]]:
        """Per repo: the paths of the tree listing at the pinned SHA (references/trees/<repo>.txt)."""
        out: dict[str, set[str]] = {}
        for repo in self.config.repos:
            listing = self.root / TREES_DIR / f"{repo}.txt"
            if listing.is_file():
                out[repo] = {l for l in listing.read_text(encoding="utf-8").splitlines() if l and not l.startswith("#")}
        return out

    @cached_property
    def known_files(self) -> dict[str, set[str]]:
        """Per repo: every path a lock or a stored tree listing knows."""
        out: dict[str, set[str]] = {}
        for (repo, _), lock in self.all_locks.items():
            bucket = out.setdefault(repo, set())
            for f in lock.get("files", []):
                bucket.add(f["path"])
                if f.get("old_path"):
                    bucket.add(f["old_path"])
        trees = self.root / TREES_DIR
        for listing in sorted(trees.glob("*.txt")) if trees.is_dir() else []:
            out.setdefault(listing.stem, set()).update(
                l for l in listing.read_text(encoding="utf-8").splitlines() if l and not l.startswith("#")
            )
        return out

    @cached_property
    def prose(self):
        """Judgement-section sentences, shingles and the cross-card prose indexes (dossier._prose)."""
        from ._prose import Prose

        return Prose(self)

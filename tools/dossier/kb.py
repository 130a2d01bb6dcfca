"""The one model of the knowledge base: every input parsed once, shared by rules, build, site and find."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path


from .cards import Card, parse_card
from .config import Config
from .errors import DossierError
from .evidence import load_lock
from .fsio import read_text

TREES_DIR = "references/trees"


@dataclass
class KnowledgeBase:
    config: Config
    card_paths: list[Path] | None = None  # None: every card
    sources: dict[str, str] = field(default_factory=dict)  # repo -> clone path for --source
    histories: dict = field(default_factory=dict)  # repo -> sources.git.History, opened on demand
    digests: dict = field(default_factory=dict)  # id(lock) -> lock_digest, see lock_sha

    @property
    def root(self) -> Path:
        return self.config.root

    def rel(self, path: Path) -> str:
        cache = self.__dict__.setdefault("_rel", {})
        if path not in cache:
            try:
                cache[path] = str(path.resolve().relative_to(self.root))
            except ValueError:
                cache[path] = str(path)
        return cache[path]

    def all_card_paths(self) -> list[Path]:
        return sorted(self.config.cards_dir.glob("*/*.md"))

    @cached_property
    def loaded(self) -> tuple[list[Card], list[tuple[Path, str]]]:
        cards, unreadable = [], []
        for path in self.card_paths if self.card_paths is not None else self.all_card_paths():
            try:
                text = read_text(path)
            except DossierError as exc:
                unreadable.append((path, str(exc).split(": ", 1)[-1]))
                continue
            cards.append(parse_card(path, text))
        return cards, unreadable

    @property
    def cards(self) -> list[Card]:
        return self.loaded[0]

    @cached_property
    def all_cards(self) -> list[Card]:
        """Every card in the tree, for cross-card rules even when checking a subset."""
        if self.card_paths is None:
            return self.cards
        out = []
        for path in self.all_card_paths():
            try:
                out.append(parse_card(path, read_text(path)))
            except DossierError:
                continue
        return out

    def card_id(self, card: Card) -> str:
        cid = card.__dict__.get("_id")
        if cid is None:
            cid = card.__dict__["_id"] = f"{card.path.parent.name}/{card.path.stem}"
        return cid

    @cached_property
    def card_ids(self) -> set[str]:
        return {f"{p.parent.name}/{p.stem}" for p in self.all_card_paths()}

    _locks: dict = None  # type: ignore[assignment]

    def lock_for(self, repo: str, pr: int) -> tuple[dict | None, str | None]:
        """(lock, error) for a card; cached."""
        if self._locks is None:
            self._locks = {}
        key = (repo, pr)
        if key not in self._locks:
            path = self.config.lock_path(repo, pr)
            if not path.exists():
                self._locks[key] = (None, f"no evidence lock at {self.rel(path)}; run `dossier fetch {repo} {pr}`")
            else:
                try:
                    self._locks[key] = (load_lock(path), None)
                except DossierError as exc:
                    self._locks[key] = (None, str(exc))
        return self._locks[key]

    def card_lock(self, card: Card) -> dict | None:
        repo, stem = card.path.parent.name, card.path.stem
        if not stem.isdigit():
            return None
        return self.lock_for(repo, int(stem))[0]

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
        for path in sorted(self.config.evidence_dir.glob("*/*.json")):
            if path.stem.isdigit():
                lock, _ = self.lock_for(path.parent.name, int(path.stem))
                if lock:
                    out[(path.parent.name, int(path.stem))] = lock
        return out

    @cached_property
    def lanes(self) -> dict[str, dict]:
        """Registered lanes by id; an unusable registry yields none (rule L010 reports it)."""
        from .lanes import load_lanes

        try:
            return {l["id"]: l for l in load_lanes(self.root) if "id" in l}
        except DossierError:
            return {}

    @cached_property
    def playbook_ids(self) -> set[str]:
        from . import playbook

        try:
            return {e["id"] for e in playbook.load_entries(self.root) if isinstance(e, dict) and "id" in e}
        except DossierError:
            return set()

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

"""The one on-disk cache: .dossier-cache/<name>.json, entries keyed by a content hash.

Every key comes from `content_key`: a SHA-256 over the dossier version and the
exact bytes or text of the inputs, so an edit anywhere, a checkout or a new tool
version invalidates an entry, while timestamps never do. A read-only or broken
cache is ignored: callers still get their answer, just computed again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from . import __version__
from .fsio import write_atomic

CACHE_DIR = ".dossier-cache"


def content_key(*inputs) -> str:
    """SHA-256 over the tool version and each input: a Path's bytes (or its absence), str or bytes."""
    digest = hashlib.sha256(__version__.encode())
    for item in inputs:
        if isinstance(item, Path):
            digest.update(b"\0path\0" + str(item).encode("utf-8", "surrogateescape") + b"\0")
            try:
                digest.update(item.read_bytes())
            except OSError:
                digest.update(b"\0missing\0")
        elif isinstance(item, bytes):
            digest.update(b"\0bytes\0" + item)
        else:
            digest.update(b"\0str\0" + str(item).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


class DiskCache:
    """A JSON map of key -> value under .dossier-cache/ (or `folder`), loaded lazily and saved atomically."""

    def __init__(self, root: Path, name: str, folder: Path | None = None):
        self.path = (folder or root / CACHE_DIR) / f"{name}.json"
        self._entries: dict | None = None
        self._dirty = False

    @property
    def entries(self) -> dict:
        if self._entries is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._entries = data if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self._entries = {}
        return self._entries

    def get(self, key: str, default=None):
        return self.entries.get(key, default)

    def put(self, key: str, value) -> None:
        if self.entries.get(key) != value:
            self.entries[key] = value
            self._dirty = True

    def save(self, keep: set[str] | None = None) -> None:
        """Write back if anything changed; `keep` drops every other key (entries no input needs)."""
        if keep is not None:
            stale = set(self.entries) - keep
            for key in stale:
                del self.entries[key]
            self._dirty = self._dirty or bool(stale)
        if not self._dirty:
            return
        try:
            write_atomic(self.path, json.dumps(self.entries, sort_keys=True, separators=(",", ":")))
        except OSError:
            pass  # a read-only checkout still gets its answers, just not the cache
        self._dirty = False

"""Atomic file writes and careful reads: a crash never leaves half a file."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .errors import DossierError


def _umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask sets it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _mode_for(path: Path) -> int:
    """The mode a plain write would give: an existing file keeps its own, a new one 0666 less the umask.

    mkstemp makes its file 0600; without this every file the tool writes would end up unreadable
    to a web server or a second user.
    """
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _temp_beside(path: Path) -> tuple[int, str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, _mode_for(path))
    return fd, tmp


def write_atomic(path: Path, text: str) -> None:
    """Write text to path via a temp file in the same folder and os.replace."""
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_new(path: Path, text: str) -> None:
    """Create path atomically; refuse if it exists (never overwrite hand-written files)."""
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        # os.link fails if the target exists, so a concurrent writer cannot be clobbered.
        os.link(tmp, path)
    except FileExistsError:
        raise DossierError(f"{path}: already exists; refusing to overwrite") from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def refuse_outside(path: Path, root: Path | None = None) -> None:
    """Refuse a symbolic link, or (given the repository root) a path that resolves outside it.

    The knowledge base is published: a card linked to `/some/secret` must not put that
    file's text on the site, so every knowledge-base file is a plain file inside the tree.
    """
    if path.is_symlink():
        raise DossierError(f"{path}: is a symbolic link (to {os.readlink(path)}); "
                           "knowledge-base files must be plain files")
    if root is not None and path.exists() and not path.resolve().is_relative_to(Path(root).resolve()):
        raise DossierError(f"{path}: resolves outside the repository ({path.resolve()})")


MAX_READ_BYTES = 64 * 1024 * 1024  # every input the tool reads is far smaller (the largest lock is ~1 MB)


def read_text(path: Path, root: Path | None = None) -> str:
    """Read UTF-8 text or raise DossierError naming the file and the byte offset.

    Symbolic links are refused, and with `root` so is anything that resolves outside it.
    """
    refuse_outside(path, root)
    try:
        if path.is_file() and path.stat().st_size > MAX_READ_BYTES:
            raise DossierError(f"{path}: {path.stat().st_size:,} bytes; the cap is {MAX_READ_BYTES:,}")
        data = path.read_bytes()
    except FileNotFoundError:
        raise DossierError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DossierError(f"{path}: is a directory") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DossierError(f"{path}: not valid UTF-8 (byte {exc.start})") from None


"""The store files this process holds SQLite connections to, known by file identity."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

FileKey = tuple[int, int]  # (st_dev, st_ino): one file, whatever path or link names it
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")

# Held while a file is examined and its connection opened, and while the table changes: a
# thread that reads a store's header must not interleave with another thread's connection to
# that file, or its close() drops the locks the new connection just took.
LOCK = threading.RLock()
_held: dict[FileKey, tuple[int, set[str]]] = {}  # key -> (open connections, paths used)


def key_of(path: str | os.PathLike[str]) -> FileKey | None:
    """The identity of the file at `path` (links followed), or None when there is none.
    os.stat opens no descriptor, so it is safe on a file with live connections."""
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return None
    return (stat.st_dev, stat.st_ino)


def holds(path: str | os.PathLike[str]) -> bool:
    """Whether `path` names a store file this process holds a connection to, or that store's
    -wal, -shm or -journal file (by any name, symlink or hard link)."""
    with LOCK:
        if not _held:
            return False
        key = key_of(path)
        if key is not None and key in _held:
            return True
        name = os.fspath(path)
        for suffix in SIDE_SUFFIXES:
            if name.endswith(suffix) and key_of(name[: -len(suffix)]) in _held:
                return True
        if key is None:
            return False
        return any(
            key_of(f"{held_path}{suffix}") == key
            for _, paths in _held.values()
            for held_path in paths
            for suffix in SIDE_SUFFIXES
        )


def _register(key: FileKey, path: str) -> None:
    with LOCK:
        count, paths = _held.get(key, (0, set()))
        _held[key] = (count + 1, paths | {path})


def _release(key: FileKey) -> None:
    with LOCK:
        count, paths = _held.get(key, (1, set()))
        if count <= 1:
            _held.pop(key, None)
        else:
            _held[key] = (count - 1, paths)


class HeldConnection(sqlite3.Connection):
    """An sqlite3 connection that is counted among the process's held store files until it
    is closed (or collected)."""

    _held_key: FileKey | None = None

    def hold(self, path: Path) -> None:
        """Count this connection as one to the file at `path` (called once, after opening)."""
        key = key_of(path)
        if key is not None and self._held_key is None:
            self._held_key = key
            _register(key, os.fspath(path))

    def close(self) -> None:
        with LOCK:
            try:
                super().close()
            finally:
                key, self._held_key = self._held_key, None
                if key is not None:
                    _release(key)

    def __del__(self) -> None:
        if self._held_key is not None:
            self.close()

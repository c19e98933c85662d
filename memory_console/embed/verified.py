"""A record of the model files already hashed, so that an unchanged file is not hashed again.

Checking the 23 MB model file's sha256 cost about 70 ms of every process that loaded the
embedder. The record, in the user's cache directory, keeps each file's digest with what the
file system says about it when it was hashed: its path, size, modification and change times
and inode. A file that still matches all of them is the file that was hashed (rewriting it, or
even resetting its modification time, moves its change time); any other is hashed again. A
record that cannot be read or written is passed over: the file is hashed as before.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from memory_console.embed import model_cache

RECORD_NAME = "verified-files.json"
log = logging.getLogger(__name__)


def _identity(stat: os.stat_result) -> list[int]:
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]


def _read() -> dict[str, dict[str, object]]:
    try:
        data = json.loads((model_cache.cache_dir() / RECORD_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recorded(path: Path, stat: os.stat_result) -> str | None:
    """The digest recorded for path when it still has the size, times and inode it had when
    it was hashed; None otherwise."""
    entry = _read().get(str(path))
    if not isinstance(entry, dict) or entry.get("identity") != _identity(stat):
        return None
    digest = entry.get("sha256")
    return digest if isinstance(digest, str) else None


def record(path: Path, stat: os.stat_result, digest: str) -> None:
    """Remember that path, as stat describes it, hashed to digest."""
    entries = _read()
    entries[str(path)] = {"identity": _identity(stat), "sha256": digest}
    folder = model_cache.cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        model_cache.write_whole(folder / RECORD_NAME, json.dumps(entries, indent=1).encode())
    except OSError as error:
        log.debug("cannot keep the verified-file record in %s: %s", folder, error)

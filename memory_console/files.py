"""Paths an operator hands us: what is there, and new private files that replace nothing."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path

KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    for test, name in KINDS:
        if test(mode):
            return name
    return "not a regular file"


def not_regular(path: Path) -> str | None:
    """Why a store cannot be created or kept at `path` (it is a directory, a FIFO, a device,
    a socket), or None when nothing is there or it is a regular file (through symlinks)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        return f"{path}: cannot inspect: {error.strerror}"
    except ValueError:  # a NUL byte in the name
        return f"{path}: not a valid file name"
    if stat.S_ISREG(mode):
        return None
    return f"{path}: is {kind_of(mode)}, not a regular file"


def not_new(path: Path) -> str | None:
    """Why `path` cannot be a new file: something (even a dangling symlink, a FIFO or a
    device) is already there. None when the name is free."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        return f"{path}: cannot inspect: {error.strerror}"
    except ValueError:
        return f"{path}: not a valid file name"
    if stat.S_ISLNK(mode):
        return f"{path}: is a symbolic link"
    if stat.S_ISREG(mode):
        return f"{path}: already exists"
    return f"{path}: is {kind_of(mode)}"


def create_new(path: Path) -> int:
    """A descriptor open for writing on a file created here, owner-only (0600): never an
    existing file, never through a symbolic link (O_EXCL with O_NOFOLLOW)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, 0o600)


def sync_directory(path: Path) -> None:
    """Flush the directory holding `path`, so a new file's name survives a power cut."""
    fd = os.open(path.parent if str(path.parent) else Path("."), os.O_RDONLY | os.O_DIRECTORY)
    try:
        with contextlib.suppress(OSError):  # some file systems cannot fsync a directory
            os.fsync(fd)
    finally:
        os.close(fd)


def purge_file_beside(store_path: Path, now: float) -> Path | None:
    """A free name beside the store for purged memories, STORE.purged-TIME[-N].jsonl (the
    console and the CLI name them alike); None when a thousand such names are taken."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    for attempt in range(1, 1000):
        suffix = "" if attempt == 1 else f"-{attempt}"
        candidate = store_path.with_name(f"{store_path.stem}.purged-{stamp}{suffix}.jsonl")
        if not_new(candidate) is None:
            return candidate
    return None

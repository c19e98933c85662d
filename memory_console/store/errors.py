"""Errors the Store raises: each carries a one-line message fit for a person."""


class StoreError(Exception):
    """A store cannot be opened, or an operation on it was refused."""


class NotFoundError(StoreError):
    """A memory or run id that the store does not hold."""


class ReadOnlyError(StoreError):
    """A write was asked of a store opened read-only."""


class ValidationError(StoreError):
    """A value that a memory field cannot take."""


class CommittedError(StoreError):
    """The change was written and committed; what was told of it afterwards (the search index
    following it) failed. The change must not be made again: a retry would write it twice."""


class StoreDamaged(StoreError):
    """The store's file is damaged (SQLite found a malformed page or no database at all):
    nothing was written, and only `check` can say more. The Store turns the driver's error
    into this one, so no caller outside the store inspects a driver's exceptions."""

    def __init__(self, location: object, error: BaseException) -> None:
        super().__init__(damaged(location, error))
        self.location = location


class StoreBusyError(StoreError):
    """Another process held the store's lock for longer than this one waits: nothing was
    done, and the same call may succeed in a moment (a caller may retry)."""


SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26


def is_damage(error: BaseException) -> bool:
    """Whether SQLite failed because the file's content is damaged (SQLITE_CORRUPT, any of
    its extended codes, or SQLITE_NOTADB), not because of a lock, the disk or a mistake."""
    import sqlite3

    if not isinstance(error, sqlite3.DatabaseError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)
    return "malformed" in str(error)


def damaged(path: object, error: BaseException) -> str:
    """The one sentence an operator reads about a damaged store, wherever it was found."""
    return (
        f"{path}: the database is damaged ({error}); nothing was written; "
        f"run `memory-console check --db {path}` for details"
    )

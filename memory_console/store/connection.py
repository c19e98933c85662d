"""The connection the Store's modules talk through: the calls both backends answer alike."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol


class Rows(Protocol):
    """The rows of one statement (an sqlite3 cursor, or store/postgres/connection.py's Cursor)."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ...) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """An sqlite3 connection or store/postgres/connection.py's Connection: `?` parameters,
    explicit transactions. Modules that need SQLite's own calls (backup, PRAGMAs, FTS5) take
    sqlite3.Connection."""

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ..., /) -> Rows: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Rows: ...

    @property
    def in_transaction(self) -> bool: ...

    def close(self) -> None: ...

    def set_progress_handler(self, handler: Any, n: int, /) -> None: ...

"""The Store as the modules it builds on see it (store/erase.py, store/vector_file.py): its
connection under its lock, its transactions and snapshots, where it lives and who acts.

store/store.py's Store is the one class that has these; the modules below it name this
protocol instead of the class, so that no import runs from them back up to store/store.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from memory_console.store.connection import Connection
from memory_console.store.dialect import Dialect
from memory_console.store.records import EventRecord, MemoryRecord

T = TypeVar("T")


class Door(Protocol):
    """What store/store.py's Store offers the modules under it (see the Store for each)."""

    actor: str
    url: str | None
    read_only: bool
    dialect: Dialect

    @property
    def path(self) -> Path: ...

    @property
    def connection(self) -> Connection: ...

    @property
    def lock(self) -> threading.RLock: ...

    def require_writable(self, what: str) -> None: ...

    def transaction(self, what: str = ...) -> AbstractContextManager[Connection]: ...

    def snapshot(self) -> AbstractContextManager[None]: ...

    def read(self, reader: Callable[..., T], *args: Any) -> T: ...

    def notify(self, kind: str, ids: list[int]) -> None: ...

    def meta(self, key: str) -> str | None: ...

    def get_many(self, ids: Sequence[int]) -> dict[int, MemoryRecord]: ...

    def history(self, memory_id: int) -> list[EventRecord]: ...

"""The store: SQLModel schema, migrations and the Store API (all reads and writes)."""

from memory_console.store.erase import ErasureRecord, ErasureScope, Joined, PurgeResult
from memory_console.store.errors import (
    NotFoundError,
    ReadOnlyError,
    StoreError,
    ValidationError,
)
from memory_console.store.records import (
    ChangeResult,
    Cursor,
    EventRecord,
    MemoryFilter,
    MemoryRecord,
    Page,
)
from memory_console.store.settings import StoreSettings
from memory_console.store.store import Store

__all__ = [
    "ChangeResult",
    "Cursor",
    "ErasureRecord",
    "ErasureScope",
    "EventRecord",
    "Joined",
    "MemoryFilter",
    "MemoryRecord",
    "NotFoundError",
    "Page",
    "PurgeResult",
    "ReadOnlyError",
    "Store",
    "StoreError",
    "StoreSettings",
    "ValidationError",
]

"""The store: SQLModel schema, migrations and the Store API (all reads and writes).

Names load on first use, so that importing a light module here (store.db, store.errors)
does not import numpy and the Store with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_console.lazy import names_from

if TYPE_CHECKING:
    from memory_console.store.erase import (
        ErasureRecord,
        ErasureScope,
        Joined,
        PurgeResult,
    )
    from memory_console.store.errors import (
        CommittedError,
        NotFoundError,
        ReadOnlyError,
        StoreBusyError,
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
        PlaceCount,
    )
    from memory_console.store.settings import (
        StoreSettings,
    )
    from memory_console.store.store import (
        Store,
    )

_HOMES: dict[str, tuple[str, ...]] = {
    "erase": ("ErasureRecord", "ErasureScope", "Joined", "PurgeResult"),
    "errors": (
        "CommittedError",
        "NotFoundError",
        "ReadOnlyError",
        "StoreBusyError",
        "StoreError",
        "ValidationError",
    ),
    "records": (
        "ChangeResult",
        "Cursor",
        "EventRecord",
        "MemoryFilter",
        "MemoryRecord",
        "Page",
        "PlaceCount",
    ),
    "settings": ("StoreSettings",),
    "store": ("Store",),
}
__all__ = [
    "ChangeResult",
    "CommittedError",
    "Cursor",
    "ErasureRecord",
    "ErasureScope",
    "EventRecord",
    "Joined",
    "MemoryFilter",
    "MemoryRecord",
    "NotFoundError",
    "Page",
    "PlaceCount",
    "PurgeResult",
    "ReadOnlyError",
    "Store",
    "StoreBusyError",
    "StoreError",
    "StoreSettings",
    "ValidationError",
]

__getattr__ = names_from(__name__, _HOMES, globals())

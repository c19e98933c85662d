"""The store: SQLModel schema, migrations and the Store API (all reads and writes).

Names load on first use, so that importing a light module here (store.db, store.errors)
does not import numpy and the Store with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_console.store.erase import (
        ErasureRecord,
        ErasureScope,
        Joined,
        PurgeResult,
    )
    from memory_console.store.errors import (
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
        "NotFoundError",
        "ReadOnlyError",
        "StoreBusyError",
        "StoreError",
        "ValidationError",
    ),
    "records": ("ChangeResult", "Cursor", "EventRecord", "MemoryFilter", "MemoryRecord", "Page"),
    "settings": ("StoreSettings",),
    "store": ("Store",),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

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
    "StoreBusyError",
    "StoreError",
    "StoreSettings",
    "ValidationError",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found once: later lookups do not come here again
    return value

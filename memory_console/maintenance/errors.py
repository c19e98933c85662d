"""Errors of maintenance: a stale plan, a plan for another store, a run that cannot be undone."""

from __future__ import annotations

from memory_console.store.errors import StoreError

STALE_MESSAGE = "the store changed while planning; run the command again"


class MaintenanceError(StoreError):
    """A maintenance request that cannot be carried out; nothing was written."""


class StalePlanError(MaintenanceError):
    """Memories the plan touches changed after it was made; make a new plan."""

    def __init__(self, stale: int, total: int) -> None:
        super().__init__(
            f"{STALE_MESSAGE} ({stale} of {total} memories changed since the plan was made)"
        )
        self.stale = stale
        self.total = total

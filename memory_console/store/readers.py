"""Reads behind the console's maintenance screens: health figures' memories, run changes,
active confidences and cancellable long reads."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from memory_console.store.errors import StoreError
from memory_console.store.records import EVENT_SELECT, EventRecord
from memory_console.store.stats import RECENT_DAYS, STALE_DAYS
from memory_console.store.store import Store
from memory_console.timeutil import DAY

PROGRESS_STEPS = 20_000  # SQLite virtual-machine steps between two looks at `cancelled`
CONFIDENCE_BATCH = 50_000  # rows per read: short holds of the lock and of the GIL


@contextmanager
def private_reader(store: Store) -> Iterator[Store]:
    """A read-only Store of its own over the same file or database, for long reads (plans,
    scans): they hold this connection, not the one the rest of the console reads through."""
    target = store.url if store.url is not None else store.path
    reader = Store(target, read_only=True, create=False, actor=store.actor)
    try:
        yield reader
    finally:
        reader.close()


class ReadCancelled(Exception):
    """A read under `cancellable` was stopped because its caller cancelled it."""


@contextmanager
def cancellable(
    store: Store, cancelled: Callable[[], bool], steps: int = PROGRESS_STEPS
) -> Iterator[None]:
    """Hold the store for a long read (a plan, a scan) that stops within milliseconds once
    `cancelled()` is true: SQLite's progress handler aborts the running statement (on
    PostgreSQL the server cancels it, store/postgres/connection.py), and the read ends with
    ReadCancelled. The store's lock is held throughout, so no other thread's statement can
    be hit by the abort."""
    with store.lock:
        if cancelled():
            raise ReadCancelled()
        connection = store.connection
        connection.set_progress_handler(lambda: 1 if cancelled() else 0, steps)
        try:
            yield
        except (sqlite3.OperationalError, StoreError) as error:
            if cancelled() and "interrupt" in str(error):
                raise ReadCancelled() from error
            raise
        finally:
            connection.set_progress_handler(None, steps)


def active_confidences(store: Store) -> tuple[np.ndarray, np.ndarray]:
    """(ids ascending, confidences) of every active memory, read in batches."""
    ids: list[np.ndarray] = []
    values: list[np.ndarray] = []
    last = -1
    while True:
        rows = store._query(
            f"SELECT id, confidence FROM memory {store.dialect.not_indexed} "
            "WHERE status = 'active' AND id > ? ORDER BY id LIMIT ?",
            (last, CONFIDENCE_BATCH),
        )
        if not rows:
            break
        table = np.array(rows, dtype=[("id", np.int64), ("confidence", np.float64)])
        ids.append(table["id"])
        values.append(table["confidence"])
        last = int(table["id"][-1])
        if len(rows) < CONFIDENCE_BATCH:
            break
    if not ids:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    return np.concatenate(ids), np.concatenate(values)


def run_changes(
    store: Store, run_id: int, after_event: int = 0, limit: int = 100
) -> list[EventRecord]:
    """The events a maintenance run wrote, in order, after the event id `after_event`."""
    rows = store._query(
        f"SELECT {EVENT_SELECT} FROM memory_event WHERE run_id = ? AND actor != 'undo' "
        "AND id > ? ORDER BY id LIMIT ?",
        (run_id, after_event, limit),
    )
    return [EventRecord.from_row(row) for row in rows]


def run_changes_before(
    store: Store, run_id: int, before_event: int, limit: int = 100
) -> list[EventRecord]:
    """The `limit` events of a run just before the event id `before_event`, in order."""
    rows = store._query(
        f"SELECT {EVENT_SELECT} FROM memory_event WHERE run_id = ? AND actor != 'undo' "
        "AND id < ? ORDER BY id DESC LIMIT ?",
        (run_id, before_event, limit),
    )
    return [EventRecord.from_row(row) for row in reversed(rows)]


def run_change_count(store: Store, run_id: int) -> int:
    rows = store._query(
        "SELECT count(*) FROM memory_event WHERE run_id = ? AND actor != 'undo'", (run_id,)
    )
    return int(rows[0][0])


def newest_ids(
    store: Store, condition: str, params: Sequence[object], limit: int, *, active: bool = True
) -> list[int]:
    """The newest `limit` ids of the (active) memories meeting `condition`."""
    where = f"status = 'active' AND {condition}" if active else condition
    rows = store._query(
        f"SELECT id FROM memory WHERE {where} ORDER BY id DESC LIMIT ?", [*params, limit]
    )
    return [int(row[0]) for row in rows]


def stale_ids(store: Store, now: float, limit: int) -> list[int]:
    """Active standard memories not accessed (or created) in STALE_DAYS, as `stats` counts."""
    return newest_ids(
        store,
        "decay_policy = 'standard' AND coalesce(last_accessed_at, created_at) < ?",
        (now - STALE_DAYS * DAY,),
        limit,
    )


def recently_accessed_ids(store: Store, now: float, limit: int) -> list[int]:
    """Memories accessed in the last RECENT_DAYS, whatever their status (as `stats` counts)."""
    return newest_ids(
        store, "last_accessed_at >= ?", (now - RECENT_DAYS * DAY,), limit, active=False
    )


def created_between_ids(
    store: Store, now: float, low_days: float, high_days: float, limit: int
) -> list[int]:
    """Active memories whose age in days lies in [low_days, high_days), as `stats` buckets."""
    return newest_ids(
        store,
        "created_at > ? AND created_at <= ?",
        (now - high_days * DAY, now - low_days * DAY),
        limit,
    )


def daily_accesses(store: Store, now: float, days: int) -> list[int]:
    """Accesses per day over the last `days` days, oldest first (today last)."""
    start = now - days * DAY
    counts = [0] * days
    for day, count in store._query(
        f"SELECT {store.dialect.whole('(at - ?) / ?')} AS d, count(*) FROM memory_event "
        "WHERE kind = 'accessed' AND at >= ? AND at < ? GROUP BY d",
        (start, DAY, start, now),
    ):
        if 0 <= day < days:
            counts[int(day)] = int(count)
    return counts

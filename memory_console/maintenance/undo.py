"""undo(): restore what a run changed, except memories changed again since, which it reports."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from memory_console.maintenance.errors import MaintenanceError
from memory_console.maintenance.runs import Run
from memory_console.store import NotFoundError, Store, bulk
from memory_console.store.records import FLAG_COLUMNS, JSON_COLUMNS, MEMORY_COLUMNS
from memory_console.store.runs import run_row, update_run
from memory_console.store.store import dumps, encode_fields
from memory_console.store.validate import INSERT_COLUMNS
from memory_console.timeutil import to_iso

ONE_NUMBER = re.compile(r'\{"(\w+)":([^,{}\[\]"]+)\}')
FLOAT_TEXT = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")  # as repr writes a finite float
# Fields whose event value is also their database value (no JSON text, no 0/1 flag).
PLAIN_FIELDS = frozenset(INSERT_COLUMNS) - set(JSON_COLUMNS) - set(FLAG_COLUMNS)


@dataclass(frozen=True)
class NotRestored:
    """A memory undo left as it is, and why."""

    id: int
    reason: str


@dataclass(frozen=True)
class UndoReport:
    """What undo did: memories restored, memories the run created and undo deleted, and the
    memories it could not restore."""

    run_id: int
    at: float
    restored: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    not_restored: list[NotRestored] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "at": to_iso(self.at),
            "restored": len(self.restored),
            "deleted": self.deleted,
            "not_restored": [{"id": n.id, "reason": n.reason} for n in self.not_restored],
        }


@dataclass
class Touched:
    """One memory as the run left it: first `before` and last `after` of each field, and
    their JSON texts when one event holds them all (reused by the undo event)."""

    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    created: bool = False
    before_text: str | None = None
    after_text: str | None = None
    events: int = 0


def undo(store: Store, run_id: int, *, now: float | None = None) -> UndoReport:
    """Restore every field the run changed to its value before the run, in one transaction.

    A memory the run touched that has any later event (an access, an edit, another run) or
    whose values differ from what the run left is not restored and is reported instead.
    Memories the run created (consolidate) are deleted, with a `purged` event, unless they
    changed since. The run is marked undone with the report.
    """
    moment = time.time() if now is None else float(now)
    with store.transaction(f"undoing run {run_id}") as conn, bulk.large_cache(conn):
        row = run_row(conn, run_id)
        if row is None:
            raise NotFoundError(f"no maintenance run with id {run_id}")
        run = Run.from_row(row)
        if run.undone_at is not None:
            raise MaintenanceError(f"run {run_id} was already undone at {to_iso(run.undone_at)}")
        touched, last_event, fields = touched_by(bulk.run_events(conn, run_id))
        later = first_later_events(bulk.events_after(conn, last_event), touched)
        names = sorted(fields | {"status"})
        current = bulk.current_values(conn, list(touched), names)
        position = {name: at for at, name in enumerate(names)}
        report = UndoReport(run_id, moment)
        restores: dict[int, dict[str, Any]] = {}
        for ident, change in touched.items():
            if not change.created and not change.after.keys() & fields:
                continue  # it only gained a link, which undoing the other end removes
            reason = refusal(ident, change, later, current, position)
            if reason:
                report.not_restored.append(NotRestored(ident, reason))
            elif change.created:
                report.deleted.append(ident)
            else:
                restores[ident] = change.before
                report.restored.append(ident)
        write_restores(conn, restores, current, names)
        store.write_events(undo_events(touched, restores, report, moment, run_id, current, names))
        bulk.delete_memories(conn, report.deleted)
        update_run(conn, run_id, {"undone_at": moment, "undo_report": dumps(report.to_json())})
    store.notify("restored", report.restored)
    store.notify("purged", report.deleted)
    return report


def touched_by(events: list[tuple[Any, ...]]) -> tuple[dict[int, Touched], int, set[str]]:
    """Per memory the run touched, its values before and after the run; the last event id;
    every field the run changed."""
    touched: dict[int, Touched] = {}
    parsed: dict[str, dict[str, Any]] = {}
    fields: set[str] = set()
    last = 0
    for event_id, memory_id, kind, before_json, after_json in events:
        last = max(last, event_id)
        change = touched.setdefault(memory_id, Touched())
        change.events += 1
        if kind == "created":
            change.created = True
        if change.events == 1:
            change.before_text = before_json
        change.after_text = after_json
        before, after = loads(before_json, parsed), loads(after_json, parsed)
        for name, value in before.items():
            change.before.setdefault(name, value)
        change.after.update(after)
        fields.update(before.keys() | after.keys())
    # A `supersedes` event names a link ({"supersedes": id}), not a column it changed.
    return touched, last, fields & set(MEMORY_COLUMNS)


def loads(text: str | None, parsed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Parsed event JSON; texts repeat a lot ({"status":"active"}), so they are cached, and
    the commonest, one number ({"confidence":0.9025}), is read without the JSON parser."""
    if not text:
        return {}
    value = parsed.get(text)
    if value is None:
        number = ONE_NUMBER.fullmatch(text)
        if number and FLOAT_TEXT.fullmatch(number[2]):
            return {number[1]: float(number[2])}
        value = json.loads(text)
        if len(parsed) < 100_000:
            parsed[text] = value
    return value


def first_later_events(
    events: list[tuple[Any, ...]], touched: dict[int, Touched]
) -> dict[int, str]:
    """Why each touched memory changed after the run, from its first later event."""
    found: dict[int, str] = {}
    for event_id, memory_id, kind, at, run_id in events:
        if memory_id in touched and memory_id not in found:
            by = f" by run {run_id}" if run_id is not None else ""
            found[memory_id] = f"changed later: {kind}{by} at {to_iso(at)} (event {event_id})"
    return found


def refusal(
    ident: int,
    change: Touched,
    later: dict[int, str],
    current: dict[int, tuple[Any, ...]],
    position: dict[str, int],
) -> str | None:
    """Why the memory cannot be restored, or None. `position` maps a field to its place in
    the rows of `current`."""
    if ident in later:
        return later[ident]
    row = current.get(ident)
    if row is None:
        return "no longer in the store"
    if change.created:
        return None
    for name, after in change.after.items():
        at = position.get(name)
        if at is not None and not same(name, row[at], after):
            return f"{name} changed since the run without an event"
    return None


def same(name: str, stored: Any, recorded: Any) -> bool:
    """Whether a database value equals a value recorded in an event."""
    if name in JSON_COLUMNS:
        return bool(json.loads(stored or "null") == recorded)
    if name in FLAG_COLUMNS:
        return bool(stored) == bool(recorded)
    return bool(stored == recorded)


def write_restores(
    conn: Any,
    restores: dict[int, dict[str, Any]],
    current: dict[int, tuple[Any, ...]],
    names: list[str],
) -> None:
    """UPDATE the memories back to their values before the run, grouped by fields, in the
    order of their present confidence (the index it walks, as apply does)."""
    at = names.index("confidence") if "confidence" in names else None
    groups: dict[tuple[str, ...], list[tuple[Any, tuple[Any, ...]]]] = {}
    for ident, before in restores.items():
        values = before if before.keys() <= PLAIN_FIELDS else encode_fields(before)
        if values:
            order = current[ident][at] if at is not None else 0.0
            groups.setdefault(tuple(values), []).append((order, (*values.values(), ident)))
    columns = {name for fields in groups for name in fields}
    with bulk.rebuilt_indexes(conn, columns, len(restores)):
        for fields, rows in groups.items():
            rows.sort(key=lambda row: row[0] if row[0] is not None else -1.0)
            bulk.update_memories(conn, fields, (row for _, row in rows), check_revision=False)


def undo_events(
    touched: dict[int, Touched],
    restores: dict[int, dict[str, Any]],
    report: UndoReport,
    at: float,
    run_id: int,
    current: dict[int, tuple[Any, ...]],
    names: list[str],
) -> list[tuple[Any, ...]]:
    """A `restored` event per restored memory and a `purged` one per deleted memory."""
    note = f"undo of run {run_id}"
    rows: list[tuple[Any, ...]] = []
    for ident, before in restores.items():
        change = touched[ident]
        single = change.events == 1 and change.before_text and change.after_text
        before_text = change.after_text if single else dumps(change.after)
        after_text = change.before_text if single else dumps(before)
        rows.append((ident, at, "undo", "restored", before_text, after_text, run_id, note, None))
    status = names.index("status")
    for ident in report.deleted:
        was = current[ident][status]
        rows.append(
            (
                ident,
                at,
                "undo",
                "purged",
                dumps({"status": was}),
                None,
                run_id,
                f"{note}: created by the run",
                None,
            )
        )
    return rows

"""apply(): write a plan in one transaction (changes, events, run row) or nothing at all."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from memory_console.maintenance import due
from memory_console.maintenance.changes import ChangeSet, Plan
from memory_console.maintenance.errors import MaintenanceError, StalePlanError
from memory_console.maintenance.runs import Run, skipped_record
from memory_console.store import Store, bulk
from memory_console.store.consolidation import copy_vector
from memory_console.store.runs import insert_run, update_run
from memory_console.store.store import dumps
from memory_console.store.validate import complete_memory

PLACEHOLDER_FIELDS = ("consolidated_into",)  # fields whose after may name a NewMemory key
EVENTS_TOLD = 10_000  # events written between two progress reports
Progress = Callable[[int, int], None]


class Tally:
    """Rows written so far (memories created, memories updated, events) out of the plan's
    total, told to a progress callback as an apply goes."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.done, self.progress = total, 0, progress

    def add(self, rows: int) -> None:
        self.done += rows
        if self.progress is not None and rows:
            self.progress(min(self.done, self.total), self.total)

    def counted(self, rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
        """`rows` passed through, told every EVENTS_TOLD."""
        since = 0
        for row in rows:
            yield row
            since += 1
            if since == EVENTS_TOLD:
                self.add(since)
                since = 0
        self.add(since)


def apply(
    store: Store,
    plan: Plan,
    *,
    actor: str | None = None,
    skip_stale: bool = False,
    progress: Progress | None = None,
) -> Run:
    """Write every change of `plan`, one event per memory and pass, and the run row, in one
    write transaction; a crash or an error leaves the store as it was. `progress(done,
    total)` hears the rows written (memories created and updated, events) as they go.

    The plan's revisions are checked inside the transaction, row by row as each memory is
    updated; if any memory changed since planning, everything is rolled back and
    StalePlanError asks for a new plan. With `skip_stale`, the memories that changed are
    left out instead (no update, no event; a consolidation group with one of them is left
    out whole, its merged memory not created) and the rest is written: decay is computed
    from base_confidence, so the next run decays a skipped memory as if nothing was missed.
    The run row counts what was skipped and keeps the ids.
    """
    if plan.store_path != store.identity:
        raise MaintenanceError(f"this plan was made for {plan.store_path}, not {store.location}")
    who = actor or store.actor
    started_at = time.time()
    clock = time.perf_counter()
    skipped = Skipped()
    with store.transaction("applying maintenance") as conn, bulk.large_cache(conn):
        if skip_stale:
            # Inside the write transaction nothing can change between this read and the
            # updates, whose own revision check stays as a guard.
            changed_ids = bulk.changed_since(conn, plan.touched_ids, plan.touched_revisions)
            plan, skipped = without_stale(plan, changed_ids)
            if skipped.ids and plan.is_empty:
                # Nothing is left to write: no run is recorded (applied twice, say).
                raise MaintenanceError(
                    f"all {len(skipped.ids):,} memories of this plan changed since it was made, "
                    "so --skip-stale leaves nothing to apply; nothing was written, no run was "
                    "recorded; make a new plan"
                )
        counts = {**plan.counts(), **skipped.counts()}
        changed = plan.changed + len(plan.new_memories)
        row: dict[str, Any] = {
            "started_at": started_at,
            "now": plan.now,
            "passes": dumps(list(plan.passes)),
            "policy": plan.policy,
            "params": dumps(plan.params.to_dict()),
            "counts": dumps(counts),
            "changed": changed,
            "duration_ms": 0,
            "actor": who,
        }
        if skipped.ids:
            row["undo_report"] = dumps(skipped_record(skipped.ids))
        run_id = insert_run(conn, row)
        values, present = final_values(plan)
        updates = (
            int(np.count_nonzero(np.logical_or.reduce(list(present.values())))) if present else 0
        )
        events = sum(len(change_set) for change_set in plan.change_sets)
        tally = Tally(len(plan.new_memories) + updates + events, progress)
        keys = insert_new_memories(store, conn, plan, run_id, started_at)
        tally.add(len(plan.new_memories))
        write_changes(conn, plan, keys, (values, present), tally)
        bulk.insert_events(conn, tally.counted(event_rows(plan, run_id, keys, started_at)))
        # The memories this run changed, and those it read as due, get their next due times,
        # from what they now hold: a second run of these passes at the same `now` reads none
        # of the memories this one changed.
        due.refresh(conn, store, plan.now)
        duration_ms = round((time.perf_counter() - clock) * 1000)
        update_run(conn, run_id, {"duration_ms": duration_ms})
    for change_set in plan.change_sets:
        store.notify(change_set.kind, change_set.ids.tolist())
    store.notify("added", sorted(keys.values()))
    return Run(
        id=run_id,
        started_at=started_at,
        now=plan.now,
        passes=list(plan.passes),
        policy=plan.policy,
        params=plan.params.to_dict(),
        counts=counts,
        changed=changed,
        duration_ms=duration_ms,
        actor=who,
        skipped=skipped.ids,
    )


@dataclass(frozen=True)
class Skipped:
    """Memories a skip-stale apply left out, by reason: `skipped_stale` changed after the
    plan was made; `skipped_with_group` did not, but share a consolidation group with one
    that did. `new_memories` is how many merged memories were not created."""

    ids: dict[str, list[int]] = field(default_factory=dict)
    new_memories: int = 0

    def counts(self) -> dict[str, int]:
        return {reason: len(ids) for reason, ids in self.ids.items()}


def placeholder_groups(plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """(member id, NewMemory key) of every change that points a memory at a new one."""
    members: list[int] = []
    groups: list[int] = []
    for change_set in plan.change_sets:
        for name in PLACEHOLDER_FIELDS:
            if name not in change_set.values:
                continue
            for ident, value in zip(
                change_set.ids.tolist(), change_set.values[name][1].tolist(), strict=True
            ):
                if isinstance(value, int) and value < 0:
                    members.append(ident)
                    groups.append(value)
    return np.array(members, dtype=np.int64), np.array(groups, dtype=np.int64)


def without_stale(plan: Plan, stale_ids: np.ndarray) -> tuple[Plan, Skipped]:
    """`plan` without the memories `stale_ids` (changed or gone since planning) and without
    every consolidation group that has one of them, so no merge is ever half applied."""
    if not stale_ids.shape[0]:
        return plan, Skipped()
    stale_ids = np.unique(stale_ids)
    dropped = stale_ids
    members, groups = placeholder_groups(plan)
    dropped_keys = np.zeros(0, dtype=np.int64)
    while members.shape[0]:
        keys = np.unique(groups[np.isin(members, dropped)])
        if keys.shape[0] == dropped_keys.shape[0]:
            break
        dropped_keys = keys
        dropped = np.union1d(stale_ids, members[np.isin(groups, keys)])
    change_sets = []
    for change_set in plan.change_sets:
        keep = ~np.isin(change_set.ids, dropped)
        if keep.all():
            change_sets.append(change_set)
        elif keep.any():
            change_sets.append(
                ChangeSet(
                    change_set.pass_name,
                    change_set.kind,
                    change_set.ids[keep],
                    {
                        name: (before[keep], after[keep])
                        for name, (before, after) in change_set.values.items()
                    },
                    change_set.reasons.take(keep),
                )
            )
    gone = set(dropped_keys.tolist())
    kept = ~np.isin(plan.touched_ids, dropped)
    narrowed = replace(
        plan,
        change_sets=change_sets,
        new_memories=[m for m in plan.new_memories if m.key not in gone],
        touched_ids=plan.touched_ids[kept],
        touched_revisions=plan.touched_revisions[kept],
    )
    ids = {"skipped_stale": stale_ids.tolist()}
    grouped = np.setdiff1d(dropped, stale_ids)
    if grouped.shape[0]:
        ids["skipped_with_group"] = grouped.tolist()
    return narrowed, Skipped(ids, len(gone))


def insert_new_memories(
    store: Store, conn: Any, plan: Plan, run_id: int, at: float
) -> dict[int, int]:
    """Insert the plan's new memories with their `created` events, inside apply's transaction
    (`conn`); placeholder key -> id. The event is stamped with the clock (`at`) and the plan's
    time; a merged memory's created_at stays its earliest member's, as the plan gives it."""
    keys: dict[int, int] = {}
    for memory in plan.new_memories:
        row = complete_memory(dict(memory.fields), plan.now)
        ident = bulk.insert_memory(conn, row)
        keys[memory.key] = ident
        members = dict(memory.fields.get("metadata") or {}).get("consolidated_from") or []
        if members:  # the merge kept a member's words: it keeps that member's vector too
            copy_vector(conn, ident, members)
        after = {"confidence": row["confidence"], "status": row["status"]}
        store.write_events(
            [
                (
                    ident,
                    at,
                    memory.pass_name,
                    memory.kind,
                    None,
                    dumps(after),
                    run_id,
                    memory.reason_text,
                    None,
                    plan.now,
                )
            ]
        )
    return keys


def resolve(value: Any, keys: dict[int, int]) -> Any:
    """A NewMemory key replaced by the id it was inserted under."""
    if isinstance(value, int) and value < 0:
        if value not in keys:
            raise MaintenanceError(f"a change refers to new memory {value}, which the plan lacks")
        return keys[value]
    return value


def final_values(plan: Plan) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per field, the last value the plan gives each touched memory, and which have one.

    Arrays are aligned with plan.touched_ids (ascending); a later pass's value wins.
    """
    ids = plan.touched_ids
    values: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    for change_set in plan.change_sets:
        rows = np.searchsorted(ids, change_set.ids)
        for name, (_, after) in change_set.values.items():
            if name not in values:
                kind = after.dtype if after.dtype.kind in "fiub" else np.dtype(object)
                values[name] = np.zeros(ids.shape[0], dtype=kind)
                present[name] = np.zeros(ids.shape[0], dtype=np.bool_)
            elif values[name].dtype != after.dtype and values[name].dtype != object:
                values[name] = values[name].astype(object)
            values[name][rows] = after
            present[name][rows] = True
    return values, present


def index_order(plan: Plan, name: str = "confidence") -> np.ndarray:
    """Each touched memory's `name` before the plan (NaN where the plan leaves it alone).

    Updating in this order walks the indexes over `name` from one end to the other instead
    of jumping around them (measured: 20% faster for 220,000 decayed memories).
    """
    key = np.full(plan.touched_ids.shape[0], np.nan)
    for change_set in reversed(plan.change_sets):
        if name in change_set.values:
            before = change_set.values[name][0]
            if before.dtype.kind == "f":
                key[np.searchsorted(plan.touched_ids, change_set.ids)] = before
    return key


def write_changes(
    conn: Any,
    plan: Plan,
    keys: dict[int, int],
    final: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
    tally: Tally,
) -> None:
    """One UPDATE per memory with its final values (`final`: final_values(plan), which the
    caller counts its rows by), grouped by the fields it changes, each group told to `tally`."""
    values, present = final
    names = list(values)
    if not names:
        return
    signature = np.zeros(plan.touched_ids.shape[0], dtype=np.int64)
    for bit, name in enumerate(names):
        signature |= present[name].astype(np.int64) << bit
    expected = int(np.count_nonzero(signature))
    updated = 0
    order = index_order(plan)
    with bulk.rebuilt_indexes(conn, names, expected):
        for group in np.unique(signature[signature > 0]).tolist():
            rows = np.flatnonzero(signature == group)
            rows = rows[np.argsort(order[rows], kind="stable")]
            fields = [name for bit, name in enumerate(names) if group >> bit & 1]
            columns = [column_values(values[name][rows], name, keys) for name in fields]
            tuples = zip(
                *columns,
                plan.touched_ids[rows].tolist(),
                plan.touched_revisions[rows].tolist(),
                strict=True,
            )
            done = bulk.update_memories(conn, fields, tuples, check_revision=True)
            updated += done
            tally.add(done)
        if updated != expected:
            raise StalePlanError(expected - updated, expected)


def column_values(array: np.ndarray, name: str, keys: dict[int, int]) -> list[Any]:
    values = array.tolist()
    if name in PLACEHOLDER_FIELDS:
        return [resolve(value, keys) for value in values]
    if name == "is_protected":
        return [int(bool(value)) for value in values]
    return values


def json_rows(names: Sequence[str], columns: Sequence[list[Any]]) -> list[str]:
    """One JSON object per row of {name: value}; floats written with repr (exact)."""
    if len(names) == 1:
        name, values = names[0], columns[0]
        if values and all(type(v) is float and math.isfinite(v) for v in values):
            head = f'{{"{name}":'
            return [f"{head}{value!r}}}" for value in values]
        cache: dict[Any, str] = {}
        out = []
        for value in values:
            text = cache.get(value) if isinstance(value, str | int | float) else None
            if text is None:
                text = dumps({name: value})
                if isinstance(value, str | int | float):
                    cache[value] = text
            out.append(text)
        return out
    return [dumps(dict(zip(names, row, strict=True))) for row in zip(*columns, strict=True)]


def event_rows(
    plan: Plan, run_id: int, keys: dict[int, int], at: float
) -> Iterator[tuple[Any, ...]]:
    """(memory_id, at, actor, kind, before, after, run_id, query, scores, evaluated_at) per
    memory and pass: `at` is the clock time of writing, evaluated_at the plan's (possibly
    simulated) now. The reason goes where a person's action keeps its reason (the query
    column)."""
    for change_set in plan.change_sets:
        yield from change_set_events(change_set, at, plan.now, run_id, keys)


def change_set_events(
    change_set: ChangeSet, at: float, evaluated_at: float, run_id: int, keys: dict[int, int]
) -> Iterator[tuple[Any, ...]]:
    names = list(change_set.fields)
    befores = json_rows(names, [change_set.values[n][0].tolist() for n in names])
    afters = json_rows(names, [column_values(change_set.values[n][1], n, keys) for n in names])
    texts, index = change_set.reasons.texts, change_set.reasons.index.tolist()
    actor, kind = change_set.pass_name, change_set.kind
    for ident, before, after, reason in zip(
        change_set.ids.tolist(), befores, afters, index, strict=True
    ):
        yield (ident, at, actor, kind, before, after, run_id, texts[reason], None, evaluated_at)

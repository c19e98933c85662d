"""undo(): restore what a run changed, refused while later runs changed the same memories or
while merged memories changed since need the operator's choice; memories changed since by
other means are left as they are and reported."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from memory_console.maintenance.errors import MaintenanceError
from memory_console.maintenance.runs import Run
from memory_console.store import NotFoundError, Store, bulk
from memory_console.store.records import FLAG_COLUMNS, JSON_COLUMNS, MEMORY_COLUMNS
from memory_console.store.runs import run_row, undone_runs_after, update_run
from memory_console.store.store import dumps, encode_fields
from memory_console.store.validate import INSERT_COLUMNS
from memory_console.timeutil import to_iso

ONE_NUMBER = re.compile(r'\{"(\w+)":([^,{}\[\]"]+)\}')
FLOAT_TEXT = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")  # as repr writes a finite float
# Fields whose event value is also their database value (no JSON text, no 0/1 flag).
PLAIN_FIELDS = frozenset(INSERT_COLUMNS) - set(JSON_COLUMNS) - set(FLAG_COLUMNS)
# What to do with a merged memory changed since the run that created it.
MergeChoice = Literal["keep-edit", "leave-merged"]
MERGE_CHOICES: tuple[MergeChoice, ...] = ("keep-edit", "leave-merged")
KEPT_KEY = "kept_by_undo"  # metadata of a merged memory kept as one of its own


@dataclass(frozen=True)
class NotRestored:
    """A memory undo left as it is, and why."""

    id: int
    reason: str


@dataclass(frozen=True)
class Blocker:
    """A later run, not undone, that changed memories this run changed."""

    run_id: int
    memories: int

    def to_json(self) -> dict[str, int]:
        return {"run_id": self.run_id, "memories": self.memories}


@dataclass(frozen=True)
class MergeConflict:
    """A memory the run merged others into that changed since the run."""

    merged: int
    sources: list[int]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"merged": self.merged, "sources": self.sources, "reason": self.reason}

    def words(self) -> str:
        sources = ", ".join(f"#{i}" for i in self.sources[:10])
        more = f" and {len(self.sources) - 10:,} more" if len(self.sources) > 10 else ""
        return f"#{self.merged} (merged from {sources}{more}): {self.reason}"


@dataclass(frozen=True)
class UndoReport:
    """What undo did: memories restored, memories the run created and undo deleted, the
    memories it could not restore, merged memories kept or left merged by the operator's
    choice, and the later runs undone first (--cascade), newest first."""

    run_id: int
    at: float
    restored: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    not_restored: list[NotRestored] = field(default_factory=list)
    kept_edits: list[int] = field(default_factory=list)
    left_merged: list[MergeConflict] = field(default_factory=list)
    cascade: list[UndoReport] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "at": to_iso(self.at),
            "restored": len(self.restored),
            "deleted": self.deleted,
            "not_restored": [{"id": n.id, "reason": n.reason} for n in self.not_restored],
            "kept_edits": self.kept_edits,
            "left_merged": [c.to_json() for c in self.left_merged],
            "cascade": [r.to_json() for r in self.cascade],
        }


class UndoRefused(MaintenanceError):
    """An undo refused with nothing changed: later runs changed the same memories
    (`blocked_by`), merged memories changed since need a choice (`conflicts`), or the undo
    would restore nothing (`not_restored` says why)."""

    def __init__(
        self,
        run_id: int,
        message: str,
        *,
        blocked_by: list[Blocker] | None = None,
        conflicts: list[MergeConflict] | None = None,
        not_restored: list[NotRestored] | None = None,
    ) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.blocked_by = blocked_by or []
        self.conflicts = conflicts or []
        self.not_restored = not_restored or []

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "undone": False,
            "refused": str(self),
            "blocked_by": [b.to_json() for b in self.blocked_by],
            "conflicts": [c.to_json() for c in self.conflicts],
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


@dataclass
class Analysis:
    """A run's changes against the store as it is now."""

    run: Run
    touched: dict[int, Touched]
    fields: set[str]
    names: list[str]
    current: dict[int, tuple[Any, ...]]
    later: dict[int, str]  # memory -> why it changed since, by other means than a later run
    blockers: list[Blocker]  # newest first
    groups: dict[int, list[int]]  # a memory the run created -> the memories merged into it

    def reason(self, ident: int) -> str | None:
        position = {name: at for at, name in enumerate(self.names)}
        return refusal(ident, self.touched[ident], self.later, self.current, position)

    def conflicts(self) -> list[MergeConflict]:
        """Merged memories the run created that changed since and are still in the store."""
        found = []
        for merged, sources in sorted(self.groups.items()):
            if merged in self.current:
                reason = self.reason(merged)
                if reason:
                    found.append(MergeConflict(merged, sources, reason))
        return found


@dataclass(frozen=True)
class UndoCheck:
    """What undo would meet now (the read-only twin of undo): later runs that block it and
    merged memories that need a choice."""

    run_id: int
    blocked_by: list[Blocker]
    conflicts: list[MergeConflict]


def undo(
    store: Store,
    run_id: int,
    *,
    now: float | None = None,
    cascade: bool = False,
    merged_edits: MergeChoice | None = None,
) -> UndoReport:
    """Restore every field the run changed to its value before the run, in one transaction.

    Refused (UndoRefused, nothing written) while a later run that is not undone changed the
    same memories, unless `cascade`: those runs are undone first, newest first, in the same
    transaction. A merged memory the run created that changed since (edited, recalled) is a
    conflict: refused unless `merged_edits` says to keep it as a memory of its own beside its
    returned sources ("keep-edit") or to leave that group merged ("leave-merged"). Other
    memories changed since are not restored and are reported; an undo that would restore
    nothing is refused, so the run stays undoable. Memories the run created are deleted,
    with a `purged` event. The run is marked undone with the report.
    """
    moment = time.time() if now is None else float(now)
    if merged_edits is not None and merged_edits not in MERGE_CHOICES:
        raise MaintenanceError(f"unknown choice for merged memories: {merged_edits!r}")
    with store.transaction(f"undoing run {run_id}") as conn, bulk.large_cache(conn):
        report = undo_in(store, conn, run_id, moment, cascade, merged_edits)
    for done in [*report.cascade, report]:
        store.notify("restored", done.restored)
        store.notify("purged", done.deleted)
    return report


def undo_check(store: Store, run_id: int) -> UndoCheck:
    """What blocks undoing the run now, and which merged memories need a choice; writes
    nothing."""

    def read(conn: Any) -> UndoCheck:
        found = analyse(conn, run_id)
        return UndoCheck(run_id, found.blockers, found.conflicts())

    return store.read(read)


def undo_in(
    store: Store,
    conn: Any,
    run_id: int,
    moment: float,
    cascade: bool,
    choice: MergeChoice | None,
) -> UndoReport:
    """undo() inside its transaction; later runs that block it first when `cascade`."""
    found = analyse(conn, run_id)
    earlier: list[UndoReport] = []
    if found.blockers and not cascade:
        raise UndoRefused(
            run_id, blocked_message(run_id, found.blockers), blocked_by=found.blockers
        )
    for blocker in found.blockers:  # newest first
        if blocker.run_id in undone_runs_after(conn, run_id):
            continue  # undone already, as a blocker of a newer blocker
        done = undo_in(store, conn, blocker.run_id, moment, cascade, choice)
        earlier.extend([*done.cascade, replace(done, cascade=[])])
    if earlier:
        found = analyse(conn, run_id)
    report = UndoReport(run_id, moment, cascade=earlier)
    conflicts = found.conflicts()
    if conflicts and choice is None:
        raise UndoRefused(run_id, conflict_message(run_id, conflicts), conflicts=conflicts)
    left: set[int] = set()
    if choice == "leave-merged":
        report.left_merged.extend(conflicts)
        left = {i for c in conflicts for i in (c.merged, *c.sources)}
    elif choice == "keep-edit":
        report.kept_edits.extend(c.merged for c in conflicts)
    restores: dict[int, dict[str, Any]] = {}
    for ident, change in found.touched.items():
        if ident in left or ident in report.kept_edits:
            continue
        if not change.created and not change.after.keys() & found.fields:
            continue  # it only gained a link, which undoing the other end removes
        reason = found.reason(ident)
        if reason:
            report.not_restored.append(NotRestored(ident, reason))
        elif change.created:
            report.deleted.append(ident)
        else:
            restores[ident] = change.before
            report.restored.append(ident)
    if not (report.restored or report.deleted or report.kept_edits) and (
        report.not_restored or report.left_merged
    ):
        raise UndoRefused(
            run_id,
            nothing_message(run_id, report),
            conflicts=report.left_merged,
            not_restored=report.not_restored,
        )
    current, names = found.current, found.names
    write_restores(conn, restores, current, names)
    store.write_events(undo_events(found.touched, restores, report, moment, run_id, current, names))
    store.write_events(keep_merged(conn, report.kept_edits, found.groups, moment, run_id))
    bulk.delete_memories(conn, report.deleted)
    update_run(conn, run_id, {"undone_at": moment, "undo_report": dumps(report.to_json())})
    return report


def analyse(conn: Any, run_id: int) -> Analysis:
    """The run's changes, what changed them since, and which later runs did."""
    row = run_row(conn, run_id)
    if row is None:
        raise NotFoundError(f"no maintenance run with id {run_id}")
    run = Run.from_row(row)
    if run.undone_at is not None:
        raise MaintenanceError(f"run {run_id} was already undone at {to_iso(run.undone_at)}")
    touched, last_event, fields = touched_by(bulk.run_events(conn, run_id))
    undone = undone_runs_after(conn, run_id)
    later, by_run = later_changes(bulk.events_after(conn, last_event), touched, run_id, undone)
    names = sorted(fields | {"status"})
    current = bulk.current_values(conn, list(touched), names)
    blockers = [Blocker(r, len(by_run[r])) for r in sorted(by_run, reverse=True)]
    groups: dict[int, list[int]] = {}
    for ident, change in touched.items():
        into = change.after.get("consolidated_into")
        if isinstance(into, int) and into in touched and touched[into].created:
            groups.setdefault(into, []).append(ident)
    return Analysis(run, touched, fields, names, current, later, blockers, groups)


def blocked_message(run_id: int, blockers: list[Blocker]) -> str:
    """`run 2 changed 1,029 of these memories after run 1: undo run 2 first, or ...`."""
    if len(blockers) == 1:
        (only,) = blockers
        who = f"run {only.run_id} changed {only.memories:,} of these memories"
        first = f"undo run {only.run_id} first"
    else:
        listed = ", ".join(f"{b.run_id} ({b.memories:,})" for b in blockers)
        who = f"runs {listed} changed these memories"
        first = "undo them first, newest first"
    order = ", ".join(str(b.run_id) for b in blockers)
    return (
        f"{who} after run {run_id}: {first}, or `memory-console undo {run_id} --cascade` "
        f"to undo {order} then {run_id}; nothing was changed"
    )


def conflict_message(run_id: int, conflicts: list[MergeConflict]) -> str:
    shown = "; ".join(c.words() for c in conflicts[:5])
    more = f"; and {len(conflicts) - 5:,} more" if len(conflicts) > 5 else ""
    return (
        f"run {run_id} merged memories that changed since: {shown}{more}. Choose "
        "--keep-edit (the sources return and each changed merged memory stays as a memory "
        "of its own) or --leave-merged (these groups stay merged, the rest of the run is "
        "undone); nothing was changed"
    )


def nothing_message(run_id: int, report: UndoReport) -> str:
    if report.not_restored:
        first = report.not_restored[0]
        why = (
            f"all {len(report.not_restored):,} memories it changed changed since "
            f"(#{first.id}: {first.reason})"
        )
    else:
        why = "every group it merged stays merged and it changed nothing else"
    return f"undo of run {run_id} would restore nothing: {why}; the run stays as it is"


def keep_merged(
    conn: Any, kept: list[int], groups: dict[int, list[int]], at: float, run_id: int
) -> list[tuple[Any, ...]]:
    """Mark each kept merged memory as one of its own (metadata `kept_by_undo`: the run and
    the sources that returned); their `edited` events."""
    if not kept:
        return []
    metadata = bulk.current_values(conn, kept, ["metadata"])
    rows, events = [], []
    for ident in kept:
        old = json.loads(metadata[ident][0] or "{}")
        new = {**old, KEPT_KEY: {"run": run_id, "sources": groups.get(ident, [])}}
        rows.append((dumps(new), ident))
        events.append(
            (
                ident,
                at,
                "undo",
                "edited",
                dumps({"metadata": old}),
                dumps({"metadata": new}),
                run_id,
                f"undo of run {run_id}: kept as a memory of its own; its sources are back",
                None,
            )
        )
    bulk.update_memories(conn, ("metadata",), rows, check_revision=False)
    return events


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


def later_changes(
    events: list[tuple[Any, ...]], touched: dict[int, Touched], run_id: int, undone: set[int]
) -> tuple[dict[int, str], dict[int, set[int]]]:
    """Why each touched memory changed after the run, from its first later event other than
    a later run's; and per later run that is not undone, the memories it changed. Events of
    later runs that were undone (theirs and their undo's) are passed over: the values check
    finds what their undo could not put back."""
    found: dict[int, str] = {}
    by_run: dict[int, set[int]] = {}
    for event_id, memory_id, kind, at, event_run in events:
        if memory_id not in touched or event_run in undone:
            continue
        if event_run is not None and event_run > run_id:
            by_run.setdefault(event_run, set()).add(memory_id)
        elif memory_id not in found:
            by = f" by run {event_run}" if event_run is not None else ""
            found[memory_id] = f"changed later: {kind}{by} at {to_iso(at)} (event {event_id})"
    return found, by_run


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

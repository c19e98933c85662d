"""A plan as a file: versioned JSON with everything apply needs, and the edits made to it.

The file keeps the plan as it was proposed (passes, policy, parameters, the time it was
evaluated at, every change set with the revisions it was made against, the new memories of
merges with their reasons as data) and the operator's edits (PlanEdits). Applying it applies
edit_plan(proposed, edits): exactly what the console applies after the same edits. Merges
that review regrouped keep their merged memory in the file, so applying reads nothing but
the revisions. Arrays are written one line each, so a large plan stays compact and a small
one readable.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from memory_console.literal import json_text
from memory_console.maintenance.changes import ChangeSet, NewMemory, Plan
from memory_console.maintenance.edits import EditedPlan, PlanEdits, edit_plan, regroup
from memory_console.maintenance.errors import MaintenanceError
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.plan_checks import (
    PlanRefused,
    check_against,
    check_as_planned,
    check_values,
    check_words,
)
from memory_console.maintenance.reasons import Reason, ReasonItem, Reasons
from memory_console.maintenance.registry import parameter_classes, resolve
from memory_console.timeutil import to_iso

if TYPE_CHECKING:
    from memory_console.store import Store

FORMAT = "memory-console-plan"
VERSION = 1
Merge = Callable[[Sequence[int]], Mapping[str, Any]]


class PlanFileError(MaintenanceError):
    """A plan file that cannot be read: malformed, of another version, or for another store."""


@dataclass(frozen=True)
class PlanFile:
    """A proposed plan, the edits made to it and the merges those edits made anew."""

    proposed: Plan
    edits: PlanEdits = PlanEdits()
    regrouped: tuple[tuple[tuple[int, ...], Mapping[str, Any]], ...] = ()

    def edited(self) -> EditedPlan:
        """The plan apply writes: the proposed one after the edits."""
        merges = dict(self.regrouped)

        def merged(ids: Sequence[int]) -> Mapping[str, Any]:
            key = tuple(sorted(ids))
            if key not in merges:
                raise PlanFileError("the plan file lacks the merged memory of a regrouped merge")
            return merges[key]

        return edit_plan(self.proposed, self.edits, merged)

    def with_edits(self, edits: PlanEdits, merge: Merge) -> PlanFile:
        """These edits instead, with `merge` (the store's extractive merge) making the
        merged memory of every group the edits regroup."""
        original = {
            key: sorted(members) for key, members in regroup(self.proposed, PlanEdits()).items()
        }
        made = []
        for key, members in regroup(self.proposed, edits).items():
            if original.get(key) != sorted(members):
                made.append((tuple(sorted(members)), dict(merge(members))))
        return PlanFile(self.proposed, edits, tuple(made))


# -- writing -------------------------------------------------------------------------------


def scalar(value: Any) -> Any:
    """numpy scalars as Python ones, for json."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to a plan file")


def line(value: Any) -> str:
    return json_text(value, default=scalar)


def array_json(array: np.ndarray) -> dict[str, Any]:
    """An array with the kind of its elements, so reading gives back the same dtype."""
    kind = {"f": "float", "i": "int", "u": "int", "b": "bool", "U": "str"}.get(
        array.dtype.kind, "object"
    )
    return {"dtype": kind, "values": array.tolist()}


def reason_json(item: ReasonItem) -> Any:
    return item if isinstance(item, str) else item.to_json()


def change_set_json(change_set: ChangeSet) -> dict[str, Any]:
    return {
        "pass": change_set.pass_name,
        "kind": change_set.kind,
        "ids": change_set.ids.tolist(),
        "values": {
            name: {"before": array_json(before), "after": array_json(after)}
            for name, (before, after) in change_set.values.items()
        },
        "reasons": {
            "items": [reason_json(item) for item in change_set.reasons.items],
            "index": change_set.reasons.index.tolist(),
        },
    }


def new_memory_json(memory: NewMemory) -> dict[str, Any]:
    return {
        "key": memory.key,
        "pass": memory.pass_name,
        "kind": memory.kind,
        "fields": dict(memory.fields),
        "reason": reason_json(memory.reason),
    }


def plan_file_chunks(plan_file: PlanFile) -> Iterator[str]:
    """The file in pieces: one line per field, per change set, per new memory."""
    plan, edits = plan_file.proposed, plan_file.edits
    head = {
        "format": FORMAT,
        "version": VERSION,
        "store": plan.store_path,
        "passes": list(plan.passes),
        "policy": plan.policy,
        "params": plan.params.to_dict(),
        "evaluated_at": plan.now,
        "evaluated_at_utc": to_iso(plan.now),
        "planned_at": plan.planned_at,
        "figures": plan.figures,
        "touched": {
            "ids": plan.touched_ids.tolist(),
            "revisions": plan.touched_revisions.tolist(),
        },
        "edits": {
            "excluded": sorted(edits.excluded),
            "apart": sorted(edits.apart),
            "splits": [sorted(part) for part in edits.splits],
        },
    }
    yield "{\n"
    for name, value in head.items():
        yield f"  {line(name)}: {line(value)},\n"
    for name, rows in (
        ("change_sets", [change_set_json(s) for s in plan.change_sets]),
        ("new_memories", [new_memory_json(m) for m in plan.new_memories]),
        (
            "regrouped",
            [{"members": list(ids), "fields": dict(f)} for ids, f in plan_file.regrouped],
        ),
    ):
        yield f"  {line(name)}: ["
        yield ",".join(f"\n    {line(row)}" for row in rows)
        yield ("\n  ]" if rows else "]") + (",\n" if name != "regrouped" else "\n")
    yield "}\n"


def write_plan_file(handle: IO[str], plan_file: PlanFile) -> int:
    """Write the file; returns how many changes (memory and pass) it proposes."""
    for chunk in plan_file_chunks(plan_file):
        handle.write(chunk)
    return sum(len(s) for s in plan_file.proposed.change_sets)


# -- reading -------------------------------------------------------------------------------


def need(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) and bool not in _kinds(kind):
        raise PlanFileError(f"not a memory-console plan: {name!r} is missing or malformed")
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def array_from(data: Any) -> np.ndarray:
    if not isinstance(data, dict) or not isinstance(data.get("values"), list):
        raise PlanFileError("not a memory-console plan: a change's values are malformed")
    values, kind = data["values"], data.get("dtype")
    if kind == "float":
        return np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    if kind == "int":
        return np.array(values, dtype=np.int64)
    if kind == "bool":
        return np.array(values, dtype=np.bool_)
    if kind == "str":
        return np.array(values, dtype=str) if values else np.empty(0, dtype=str)
    if kind == "object":
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array
    raise PlanFileError(f"not a memory-console plan: unknown array kind {kind!r}")


def reason_from(data: Any) -> ReasonItem:
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        return Reason.from_json(data)
    raise PlanFileError("not a memory-console plan: a reason is malformed")


def change_set_from(data: Any) -> ChangeSet:
    if not isinstance(data, dict):
        raise PlanFileError("not a memory-console plan: a change set is malformed")
    values = {
        str(name): (array_from(pair.get("before")), array_from(pair.get("after")))
        for name, pair in need(data, "values", dict).items()
        if isinstance(pair, dict)
    }
    reasons = need(data, "reasons", dict)
    items = [reason_from(item) for item in need(reasons, "items", list)]
    index = np.array(need(reasons, "index", list), dtype=np.int64)
    if index.shape[0] and (index.min() < 0 or index.max() >= len(items)):
        raise PlanFileError("not a memory-console plan: a reason index is out of range")
    ids = np.array(need(data, "ids", list), dtype=np.int64)
    return ChangeSet(
        str(need(data, "pass", str)),
        str(need(data, "kind", str)),
        ids,
        values,
        Reasons(items, index),
    )


def new_memory_from(data: Any) -> NewMemory:
    if not isinstance(data, dict):
        raise PlanFileError("not a memory-console plan: a new memory is malformed")
    key = need(data, "key", int)
    if key >= 0:
        raise PlanFileError("not a memory-console plan: a new memory's key must be negative")
    return NewMemory(
        key,
        str(need(data, "pass", str)),
        dict(need(data, "fields", dict)),
        reason_from(data.get("reason")),
        kind=str(need(data, "kind", str)),
    )


def edits_from(data: Any) -> PlanEdits:
    if not isinstance(data, dict):
        raise PlanFileError("not a memory-console plan: 'edits' is malformed")

    def ids(values: Any) -> frozenset[int]:
        if not isinstance(values, list) or not all(type(v) is int for v in values):
            raise PlanFileError("not a memory-console plan: 'edits' is malformed")
        return frozenset(values)

    splits = tuple(ids(part) for part in data.get("splits", []))
    return PlanEdits(ids(data.get("excluded", [])), ids(data.get("apart", [])), splits)


def plan_file_from(data: Any) -> PlanFile:
    """A PlanFile from the decoded JSON; PlanFileError (one line) when it is not one."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PlanFileError('not a memory-console plan (no "format": "memory-console-plan")')
    version = data.get("version")
    if version != VERSION:
        raise PlanFileError(
            f"plan file version {version!r} is not one this memory-console reads ({VERSION})"
        )
    try:
        passes = resolve(need(data, "passes", list))
        params = MaintenanceParams.from_dict(need(data, "params", dict), parameter_classes())
    except (ValueError, TypeError) as error:
        raise PlanFileError(f"not a memory-console plan: {error}") from error
    touched = need(data, "touched", dict)
    touched_ids = np.array(need(touched, "ids", list), dtype=np.int64)
    revisions = np.array(need(touched, "revisions", list), dtype=np.int64)
    if touched_ids.shape != revisions.shape or np.any(np.diff(touched_ids) <= 0):
        raise PlanFileError("not a memory-console plan: 'touched' is malformed")
    proposed = Plan(
        passes=passes,
        params=params,
        now=float(need(data, "evaluated_at", (int, float))),
        store_path=str(need(data, "store", str)),
        change_sets=[change_set_from(s) for s in need(data, "change_sets", list)],
        new_memories=[new_memory_from(m) for m in need(data, "new_memories", list)],
        figures=dict(need(data, "figures", dict)),
        touched_ids=touched_ids,
        touched_revisions=revisions,
        planned_at=float(need(data, "planned_at", (int, float))),
    )
    if not all(np.isin(s.ids, touched_ids).all() for s in proposed.change_sets):
        raise PlanFileError("not a memory-console plan: a change has no revision")
    try:
        check_values(proposed)
    except PlanRefused as error:
        raise PlanFileError(f"refused, nothing written: {error}") from error
    regrouped = []
    for entry in data.get("regrouped", []):
        if not isinstance(entry, dict):
            raise PlanFileError("not a memory-console plan: 'regrouped' is malformed")
        members = tuple(sorted(int(i) for i in need(entry, "members", list)))
        words = dict(need(entry, "fields", dict))
        try:
            check_words(members, words)
        except PlanRefused as error:
            raise PlanFileError(f"refused, nothing written: {error}") from error
        regrouped.append((members, words))
    return PlanFile(proposed, edits_from(data.get("edits", {})), tuple(regrouped))


def read_plan_file(path: Path) -> PlanFile:
    """The plan file at `path`; PlanFileError (one line) when it cannot be used."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PlanFileError(
            f"{path}: cannot read: {getattr(error, 'strerror', None) or error}"
        ) from error
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise PlanFileError(f"{path}: not a memory-console plan (invalid JSON: {error})") from error
    try:
        return plan_file_from(data)
    except PlanFileError as error:
        raise PlanFileError(f"{path}: {error}") from error
    except (ValueError, TypeError, OverflowError) as error:
        raise PlanFileError(f"{path}: not a memory-console plan ({error})") from error


def check_store(plan_file: PlanFile, store: Store) -> None:
    """Refuse a plan made for another store, or one that changes a protected memory or
    merges across owners and topics (plan_checks.py)."""
    if plan_file.proposed.store_path != store.identity:
        raise PlanFileError(
            f"this plan was made for {plan_file.proposed.store_path}, not {store.location}"
        )
    try:
        check_against(plan_file.proposed, store)
        check_as_planned(plan_file.proposed, store)
    except PlanRefused as error:
        raise PlanFileError(f"refused, nothing written: {error}") from error

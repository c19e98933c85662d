"""How a plan reads: its JSON object (changes streamed, complete) and its largest changes."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from memory_console.literal import json_text
from memory_console.maintenance.changes import Change, ChangeSet, Plan
from memory_console.timeutil import to_iso


def plan_warnings(plan: Plan) -> list[str]:
    """What an operator must know before trusting the plan (memories consolidation could
    only compare as exact duplicates, for want of a vector)."""
    from memory_console.maintenance.passes.consolidate import missing_vector_warning

    found = missing_vector_warning(plan.figures.get("consolidate", {}))
    return [found] if found else []


def plan_header(plan: Plan) -> dict[str, Any]:
    """Everything about a plan but its changes: policy, now, headline figures, parameters."""
    return {
        "warnings": plan_warnings(plan),
        "policy": plan.policy,
        "now": to_iso(plan.now),
        "passes": list(plan.passes),
        **plan.summary(),
        "counts": plan.counts(),
        "figures": plan.figures,
        "params": plan.params.to_dict(),
        "planned_ms": plan.duration_ms,
        # Which memories the plan read (maintenance/due.py): "due" or "all", why all, how many.
        "read": plan.read,
        "read_why": plan.read_why,
        "memories_read": plan.rows_read,
    }


def value_json(value: Any) -> str:
    if type(value) is float and math.isfinite(value):
        return repr(value)
    return json_text(value)


def change_set_json(change_set: ChangeSet) -> Iterator[str]:
    """One compact JSON object per memory and field:
    {"id", "field", "before", "after", "reason", "pass", "kind"}."""
    head = f'"pass": {value_json(change_set.pass_name)}, "kind": {value_json(change_set.kind)}'
    reasons = [value_json(text) for text in change_set.reasons.texts]
    index = change_set.reasons.index.tolist()
    ids = change_set.ids.tolist()
    for name, (before, after) in change_set.values.items():
        field = value_json(name)
        befores = [value_json(v) for v in before.tolist()]
        afters = [value_json(v) for v in after.tolist()]
        for ident, b, a, r in zip(ids, befores, afters, index, strict=True):
            yield (
                f'{{"id": {ident}, "field": {field}, "before": {b}, "after": {a}, '
                f'"reason": {reasons[r]}, {head}}}'
            )


def plan_json_chunks(plan: Plan, extra: dict[str, Any] | None = None) -> Iterator[str]:
    """The plan as ONE JSON object, in pieces to write one after the other: the header
    fields (plus `extra`, e.g. run_id) and the complete `changes` list."""
    header = json_text({**plan_header(plan), **(extra or {})}, indent=2)
    yield header[:-2] + ',\n  "changes": ['
    first = True
    for change_set in plan.change_sets:
        for row in change_set_json(change_set):
            yield ("\n    " if first else ",\n    ") + row
            first = False
    yield "\n  ]\n}\n"


def largest_drops(plan: Plan, limit: int = 20) -> list[Change]:
    """The `limit` confidence changes with the largest drop, largest first."""
    candidates: list[tuple[float, Change]] = []
    for change_set in plan.change_sets:
        if "confidence" not in change_set.values or not len(change_set):
            continue
        before, after = change_set.values["confidence"]
        drop = before.astype(float) - after.astype(float)
        top = np.argsort(-drop, kind="stable")[:limit]
        for row in top.tolist():
            candidates.append((float(drop[row]), row_change(change_set, row, "confidence")))
    candidates.sort(key=lambda pair: -pair[0])
    return [change for _, change in candidates[:limit]]


def first_changes(plan: Plan, limit: int = 20) -> dict[str, list[Change]]:
    """Per event kind other than decayed, its first `limit` changes (one per memory)."""
    shown: dict[str, list[Change]] = {}
    for change_set in plan.change_sets:
        if change_set.kind == "decayed" or not len(change_set):
            continue
        rows = shown.setdefault(change_set.kind, [])
        name = next((n for n in change_set.values if n != "confidence"), "confidence")
        for row in range(min(len(change_set), limit - len(rows))):
            rows.append(row_change(change_set, row, name))
    return shown


def row_change(change_set: ChangeSet, row: int, name: str) -> Change:
    before, after = change_set.values[name]
    return Change(
        int(change_set.ids[row]),
        name,
        before[row : row + 1].tolist()[0],
        after[row : row + 1].tolist()[0],
        change_set.reasons[row],
        change_set.pass_name,
        change_set.kind,
    )

"""What a plan read from a file may propose: the fields each pass writes, values the store
accepts, no protected memory touched, merged memories screened as any agent's write.

A plan file is input (an operator may edit it, or anyone who can write the file): it is
parsed into the Plan the planner makes and then held to what the planner itself could have
proposed. A refusal is one line naming the change set or new memory and the field; nothing
is written.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_console.maintenance.errors import MaintenanceError
from memory_console.sensitive import credential_kinds
from memory_console.store.errors import ValidationError
from memory_console.store.validate import check_field

if TYPE_CHECKING:
    from memory_console.maintenance.changes import ChangeSet, Plan
    from memory_console.store import Store

# The fields each pass writes to existing memories, and nothing else a plan may change.
PASS_FIELDS: dict[str, frozenset[str]] = {
    "expire-banks": frozenset({"status"}),
    "expire": frozenset({"status"}),
    "consolidate": frozenset({"status", "consolidated_into"}),
    "decay": frozenset({"confidence", "status"}),
    "cleanup": frozenset({"decay_policy"}),
    "quota": frozenset({"status"}),
    "promote": frozenset({"memory_type", "decay_policy", "confidence", "base_confidence"}),
    "prune": frozenset({"status"}),
    "sensitive": frozenset({"status"}),
    "classify": frozenset({"memory_type"}),
    "protect-facts": frozenset({"is_protected"}),
    "supersede": frozenset({"status", "superseded_by"}),
}
# Passes allowed to change a protected memory: only the one that protects.
TOUCHES_PROTECTED = frozenset({"protect-facts"})
# What a merged memory (consolidate's new memory) is made of.
NEW_MEMORY_FIELDS = frozenset(
    {
        "owner",
        "topic",
        "tier",
        "memory_type",
        "title",
        "content",
        "keywords",
        "source",
        "importance",
        "confidence",
        "base_confidence",
        "retrieval_count",
        "created_at",
        "last_accessed_at",
        "decay_policy",
        "metadata",
    }
)
NEW_MEMORY_PASSES = frozenset({"consolidate"})


class PlanRefused(MaintenanceError):
    """A plan read from a file proposes what no pass would: nothing was written."""


def check_values(proposed: Plan) -> None:
    """Every change set's pass, fields and new values, and every new memory's fields, as the
    planner could have made them (no store needed)."""
    keys = {memory.key for memory in proposed.new_memories}
    for number, change in enumerate(proposed.change_sets, 1):
        check_change_set(number, change, keys)
    for memory in proposed.new_memories:
        check_new_memory(memory.key, memory.pass_name, dict(memory.fields))


def check_change_set(number: int, change: ChangeSet, keys: set[int]) -> None:
    where = f"change set {number} ({change.pass_name})"
    allowed = PASS_FIELDS.get(change.pass_name)
    if allowed is None:
        raise PlanRefused(f"{where}: no pass is called {change.pass_name!r}")
    count = len(change.ids)
    if np.unique(change.ids).shape[0] != count:
        raise PlanRefused(f"{where}: a memory is listed twice")
    for name, (before, after) in change.values.items():
        if name not in allowed:
            raise PlanRefused(
                f"{where}: field {name!r} is not one the {change.pass_name} pass writes "
                f"({', '.join(sorted(allowed))})"
            )
        if len(before) != count or len(after) != count:
            raise PlanRefused(f"{where}: field {name!r} has {len(after)} values for {count} ids")
        for ident, value in zip(change.ids.tolist(), after.tolist(), strict=True):
            check_value(f"{where}, memory {ident}", name, value, keys)


def check_value(where: str, name: str, value: Any, keys: set[int]) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise PlanRefused(f"{where}: {name} must be a finite number, not {value}")
    if name in ("consolidated_into", "superseded_by") and isinstance(value, int) and value < 0:
        if value not in keys:
            raise PlanRefused(f"{where}: {name} names no new memory of this plan ({value})")
        return
    try:
        check_field(name, value)
    except ValidationError as error:
        raise PlanRefused(f"{where}: {error}") from error


def check_new_memory(key: int, pass_name: str, fields: dict[str, Any]) -> None:
    where = f"new memory {key} ({pass_name})"
    if pass_name not in NEW_MEMORY_PASSES:
        raise PlanRefused(f"{where}: the {pass_name} pass creates no memories")
    check_merged_fields(where, fields)


def check_words(members: tuple[int, ...], fields: dict[str, Any]) -> None:
    """The fields a file gives a regrouped merge of `members` (an operator's split)."""
    check_merged_fields(f"the merge of {', '.join(map(str, members))}", fields)


def check_merged_fields(where: str, fields: dict[str, Any]) -> None:
    """A merged memory's fields, checked and screened as any agent's write."""
    unknown = sorted(set(fields) - NEW_MEMORY_FIELDS)
    if unknown:
        raise PlanRefused(f"{where}: field {unknown[0]!r} is not one a merged memory has")
    for name, value in fields.items():
        check_value(where, name, value, set())
    found = credential_kinds([fields.get("title"), fields.get("content"), fields.get("keywords")])
    if found:
        raise PlanRefused(f"{where}: its text holds {found[0]}, which no memory may keep")


def check_against(proposed: Plan, store: Store) -> None:
    """What only the store can tell: no protected memory changed by a pass that may not,
    and a merged memory keeps the owner and topic of every memory merged into it."""
    ids = sorted({int(i) for change in proposed.change_sets for i in change.ids.tolist()})
    records = store.get_many(ids)
    protected = {ident for ident, record in records.items() if record.is_protected}
    scope = {ident: (record.owner, record.topic) for ident, record in records.items()}
    members: dict[int, set[tuple[str, str]]] = {}
    for number, change in enumerate(proposed.change_sets, 1):
        if change.pass_name not in TOUCHES_PROTECTED:
            hit = sorted(protected & set(change.ids.tolist()))
            if hit:
                raise PlanRefused(
                    f"change set {number} ({change.pass_name}): memory {hit[0]} is protected, "
                    "and no pass but protect-facts changes a protected memory"
                )
        if "consolidated_into" in change.values:
            after = change.values["consolidated_into"][1].tolist()
            for ident, into in zip(change.ids.tolist(), after, strict=True):
                if isinstance(into, int) and ident in scope:
                    members.setdefault(into, set()).add(scope[ident])
    for memory in proposed.new_memories:
        own = (memory.fields.get("owner"), memory.fields.get("topic"))
        found = members.get(memory.key, set())
        if found and found != {own}:
            raise PlanRefused(
                f"new memory {memory.key} ({memory.pass_name}): owner and topic must be its "
                "members' own"
            )


def _same(first: Any, second: Any) -> bool:
    if isinstance(first, float) and isinstance(second, float):
        return abs(first - second) <= 1e-9 or (math.isnan(first) and math.isnan(second))
    return bool(first == second)


def check_as_planned(proposed: Plan, store: Store) -> None:
    """The file proposes what the planner proposes now, on this store, with the plan's own
    passes, parameters and `now`, for every memory unchanged since the plan was made (a
    changed one is the staleness check's to refuse or skip): no id, field or value of its own.
    The operator's edits (left out, kept apart, split) are kept beside the plan and applied
    after this check, as for a plan made in the same process."""
    from memory_console.maintenance.planner import plan

    ids = proposed.touched_ids.tolist()
    revision_of = {ident: record.revision for ident, record in store.get_many(ids).items()}
    unchanged = {
        ident
        for ident, revision in zip(ids, proposed.touched_revisions.tolist(), strict=True)
        if revision_of.get(ident) == revision
    }
    fresh = plan(store, proposed.passes, proposed.params, now=proposed.now)
    planned: dict[tuple[str, str, int], dict[str, Any]] = {}
    for change in fresh.change_sets:
        for position, ident in enumerate(change.ids.tolist()):
            planned[(change.pass_name, change.kind, ident)] = {
                name: after[position] for name, (_, after) in change.values.items()
            }
    for number, change in enumerate(proposed.change_sets, 1):
        for position, ident in enumerate(change.ids.tolist()):
            if ident not in unchanged:
                continue
            where = f"change set {number} ({change.pass_name}), memory {ident}"
            expected = planned.get((change.pass_name, change.kind, ident))
            if expected is None:
                raise PlanRefused(f"{where}: the {change.pass_name} pass proposes no such change")
            for name, (_, after) in change.values.items():
                value = _plain(after[position])
                if name == "consolidated_into" and isinstance(value, int) and value < 0:
                    # A new memory's placeholder key: numbered in the order the groups were
                    # found, which other memories' changes since may shift.
                    if name in expected and _plain(expected[name]) is not None:
                        continue
                if name not in expected or not _same(value, _plain(expected[name])):
                    raise PlanRefused(
                        f"{where}: {name} {_plain(value)!r} is not what the pass computes"
                    )
    made = [_plain_fields(dict(memory.fields)) for memory in fresh.new_memories]
    members: dict[int, set[int]] = {}
    for change in proposed.change_sets:
        if "consolidated_into" in change.values:
            after = change.values["consolidated_into"][1].tolist()
            for ident, into in zip(change.ids.tolist(), after, strict=True):
                members.setdefault(_plain(into), set()).add(ident)
    for memory in proposed.new_memories:
        if not members.get(memory.key, set()) <= unchanged:
            continue  # a member changed since: the staleness check refuses or skips it
        if _plain_fields(dict(memory.fields)) not in made:
            raise PlanRefused(
                f"new memory {memory.key} ({memory.pass_name}): not the memory the pass makes"
            )


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _plain_fields(fields: dict[str, Any]) -> dict[str, Any]:
    import json

    return json.loads(json.dumps(fields, default=_plain))

"""plan(): run passes in canonical order over one snapshot of the store; nothing is written."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from memory_console.maintenance import due, registry
from memory_console.maintenance.changes import ChangeSet, NewMemory, Plan
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.store import Store

# Closing sweeps at most: three closing passes settle in two, the last one confirms.
CLOSING_SWEEPS = 4


def plan(
    store: Store,
    passes: Sequence[str] = registry.DECAY,
    params: MaintenanceParams | None = None,
    now: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    partial: Callable[[Any], None] | None = None,
    *,
    every: bool = False,
) -> Plan:
    """Every change `passes` would make at `now` (default: the clock), one after the other
    over the same arrays, so each pass sees what the earlier ones proposed. `progress`
    hears each step as it starts: ("reading", 0, n), then (pass name, i, n) for i in 1..n;
    `partial` what a pass has found so far (consolidate: each scope's ScopeGroups).

    Passes that `closes` run again after the last one, in sweeps until none proposes more;
    what later passes propose for a memory the plan creates becomes that memory's fields.
    Either way one run does what a second run at the same `now` would otherwise find to do.

    Reads happen in one read transaction: the plan reflects a single state of the store,
    and the revisions it keeps let apply detect any change made after it. The plan reads
    only the memories due by `now` when the due index serves its passes and parameters
    (maintenance/due.py), and the whole of its passes' scope otherwise or with `every`;
    either way it proposes the same changes.
    """
    names = registry.resolve(passes)
    settings = store.settings()
    params = params or registry.build_params(names, settings=settings)
    moment = time.time() if now is None else float(now)
    started = time.perf_counter()
    change_sets: list[ChangeSet] = []
    new_memories: list[NewMemory] = []
    figures: dict[str, dict[str, int]] = {}
    with store.snapshot():
        why = "every memory was asked for" if every else None
        why = why or due.full_read_reason(store, names, params, settings)
        rows = registry.rows_of(names, params, moment, due=why is None)
        if progress is not None:
            progress("reading", 0, len(names))
        frame = Frame.load(store, rows, registry.columns_of(names), lazily=True)
        frame.partial = partial
        for number, name in enumerate(names, start=1):
            if progress is not None:
                progress(name, number, len(names))
            if name in registry.DECAY_DISABLED and not settings.decay_enabled:
                figures[name] = {"disabled": 1}  # decay_enabled is false: plans nothing
                continue
            result = registry.get(name).plan(frame, params, moment)
            change_sets.extend(s for s in result.change_sets if len(s))
            new_memories.extend(result.new_memories)
            frame.add(result.new_memories, moment)
            figures[name] = dict(result.figures)
        closing = [
            name
            for number, name in enumerate(names, start=1)
            if registry.get(name).closes and number < len(names) and name in figures
        ]
        # One closing pass can give another work (classify retypes a merged memory, promote
        # then lifts it, protect-facts then shields it): sweep until a sweep proposes nothing.
        for _sweep in range(CLOSING_SWEEPS):
            proposed = 0
            for name in closing:
                result = registry.get(name).plan(frame, params, moment)
                found = [s for s in result.change_sets if len(s)]
                proposed += sum(len(s) for s in found)
                change_sets.extend(found)
                for key, value in result.figures.items():
                    figures[name][key] = figures[name].get(key, 0) + value
            if not proposed:
                break
    change_sets, new_memories = folded(change_sets, new_memories)
    touched_ids, touched_revisions = frame.touched_revisions()
    read = frame.read_count()
    return Plan(
        passes=names,
        params=params,
        now=moment,
        store_path=store.identity,
        change_sets=change_sets,
        new_memories=new_memories,
        figures=figures,
        touched_ids=np.asarray(touched_ids, dtype=np.int64),
        touched_revisions=np.asarray(touched_revisions, dtype=np.int64),
        planned_at=time.time(),
        duration_ms=round((time.perf_counter() - started) * 1000),
        read="all" if why else "due",
        read_why=why,
        rows_read=read,
    )


def folded(
    change_sets: list[ChangeSet], new_memories: list[NewMemory]
) -> tuple[list[ChangeSet], list[NewMemory]]:
    """Changes proposed for memories the plan creates (negative keys) moved into their
    fields: a merged memory decayed or archived by a later pass is created so."""
    if not new_memories:
        return change_sets, new_memories
    fields: dict[int, dict[str, Any]] = {m.key: dict(m.fields) for m in new_memories}
    kept: list[ChangeSet] = []
    for change_set in change_sets:
        new = change_set.ids < 0
        if not new.any():
            kept.append(change_set)
            continue
        for name, (_, after) in change_set.values.items():
            for key, value in zip(change_set.ids[new].tolist(), after[new].tolist(), strict=True):
                fields[key][name] = int(value) if name == "is_protected" else value
        if not new.all():
            kept.append(change_set.take(~new))
    return kept, [replace(m, fields=fields[m.key]) for m in new_memories]

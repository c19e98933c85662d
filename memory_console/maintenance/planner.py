"""plan(): run passes in canonical order over one snapshot of the store; nothing is written."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from memory_console.maintenance import registry
from memory_console.maintenance.changes import ChangeSet, NewMemory, Plan
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.store import Store


def plan(
    store: Store,
    passes: Sequence[str] = registry.DECAY,
    params: MaintenanceParams | None = None,
    now: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> Plan:
    """Every change `passes` would make at `now` (default: the clock), one after the other
    over the same arrays, so each pass sees what the earlier ones proposed. `progress`
    hears each step as it starts: ("reading", 0, n), then (pass name, i, n) for i in 1..n.

    Reads happen in one read transaction: the plan reflects a single state of the store,
    and the revisions it keeps let apply detect any change made after it.
    """
    names = registry.resolve(passes)
    settings = store.settings()
    params = params or registry.build_params(names, settings=settings)
    moment = time.time() if now is None else float(now)
    started = time.perf_counter()
    rows = registry.rows_of(names, params, moment)
    change_sets: list[ChangeSet] = []
    new_memories: list[NewMemory] = []
    figures: dict[str, dict[str, int]] = {}
    with store.snapshot():
        if progress is not None:
            progress("reading", 0, len(names))
        frame = Frame.load(store, rows, registry.columns_of(names))
        for number, name in enumerate(names, start=1):
            if progress is not None:
                progress(name, number, len(names))
            if name in registry.DECAY_DISABLED and not settings.decay_enabled:
                figures[name] = {"disabled": 1}  # decay_enabled is false: plans nothing
                continue
            result = registry.get(name).plan(frame, params, moment)
            change_sets.extend(s for s in result.change_sets if len(s))
            new_memories.extend(result.new_memories)
            figures[name] = dict(result.figures)
    touched_ids, touched_revisions = frame.touched_revisions()
    return Plan(
        passes=names,
        params=params,
        now=moment,
        store_path=str(store.path.resolve()),
        change_sets=change_sets,
        new_memories=new_memories,
        figures=figures,
        touched_ids=np.asarray(touched_ids, dtype=np.int64),
        touched_revisions=np.asarray(touched_revisions, dtype=np.int64),
        planned_at=time.time(),
        duration_ms=round((time.perf_counter() - started) * 1000),
    )

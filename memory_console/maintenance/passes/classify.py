"""The classify pass: memories whose stored type differs from the type rules' answer, retyped.

Never in the default `maintain`: stores made before the rules keep their types until an
operator runs it, previews the reasons and applies (or undoes) it knowingly.
"""

from __future__ import annotations

import numpy as np

from memory_console.agent.rules.classify import classify_type
from memory_console.maintenance.changes import ChangeSet, PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.registry import PassSpec


def plan_classify(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    """Each maintainable memory's content classified; a different type is proposed with
    the rules' reason ("episodic: a time it happened or will ("yesterday")")."""
    if frame.store is None:
        raise ValueError("the classify pass reads memory texts: the frame needs its store")
    # Maintainable only: decay_policy none is never touched by a pass, and promote makes its
    # semantic memories so (retyping them back would undo promote at every run).
    open_rows = frame.maintainable()
    stored = frame.column("memory_type")
    rows: list[int] = []
    after: list[str] = []
    reasons: list[str] = []
    for ident, _title, content, _metadata in frame.texts():
        position = int(np.searchsorted(frame.ids, ident))
        if position >= len(frame) or frame.ids[position] != ident:
            continue
        if not open_rows[position]:
            continue
        found, reason = classify_type(content)
        if found != stored[position]:
            rows.append(position)
            after.append(found)
            reasons.append(reason)
    chosen = np.array(rows, dtype=np.int64)
    values = {"memory_type": (stored[chosen].copy(), np.array(after, dtype=object))}
    change = ChangeSet.build("classify", "edited", frame.ids[chosen], values, reasons)
    frame.record(change)
    counts = {f"to {name}": after.count(name) for name in sorted(set(after))}
    return PassResult([change], figures={"retyped": len(rows), **counts})


PASS = PassSpec(
    name="classify",
    plan=plan_classify,
    summary="retype memories the type rules read otherwise (facts semantic, events episodic)",
    order=5,
    scope="active",
    closes=True,  # consolidate (order 25) creates memories in its leader's type, unread by rules
)

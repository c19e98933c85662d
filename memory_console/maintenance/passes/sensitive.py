"""The sensitive pass: forget (archive) memories holding credentials, identifiers or, unless
the user asked to keep them, health data."""

from __future__ import annotations

import json

import numpy as np

from memory_console.maintenance.changes import PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.passes.archive import archived_set
from memory_console.maintenance.registry import PassSpec
from memory_console.sensitive import find_sensitive

ARTICLES = {
    "api key": "an api key",
    "ssh key": "an ssh key",
    "US SSN": "a US SSN",
    "health data": "health data",
}


def holds(kinds: list[str]) -> str:
    """e.g. "holds a password and an api key"."""
    named = [ARTICLES.get(kind, f"a {kind}") for kind in kinds]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return f"holds {listed}"


def user_requested(metadata: str | None) -> bool:
    try:
        value = json.loads(metadata or "{}")
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and value.get("user_requested") is True


def plan_sensitive(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    """Scan the title and content of every maintainable memory still active in the plan."""
    if frame.store is None:
        raise ValueError("the sensitive pass reads memory texts: the frame needs its store")
    open_rows = frame.maintainable()
    rows: list[int] = []
    reasons: list[str] = []
    for ident, title, content, metadata in frame.texts():
        position = int(np.searchsorted(frame.ids, ident))
        if position >= len(frame) or frame.ids[position] != ident or not open_rows[position]:
            continue
        health = not user_requested(metadata)
        findings = find_sensitive(title, health=health) + find_sensitive(content, health=health)
        if findings:
            rows.append(position)
            reasons.append(holds(list(dict.fromkeys(f.kind for f in findings))))
    change = archived_set(frame, "sensitive", np.array(rows, dtype=np.int64), reasons)
    return PassResult([change], figures={"sensitive": len(rows)})


PASS = PassSpec(
    name="sensitive",
    plan=plan_sensitive,
    summary="forget (archive) memories holding credentials, identifiers or health data",
    order=10,
    scope="maintainable",
)

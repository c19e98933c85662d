"""Archiving rows of a frame: the change set shared by expire, quota, prune and sensitive."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_console.maintenance.changes import ChangeSet, Reasons
from memory_console.maintenance.frame import Frame


def archived_set(
    frame: Frame, pass_name: str, rows: np.ndarray, reasons: Sequence[str] | Reasons
) -> ChangeSet:
    """status active -> archived for the frame rows `rows`, recorded into the frame."""
    values = {"status": (np.full(rows.shape, "active"), np.full(rows.shape, "archived"))}
    change = ChangeSet.build(pass_name, "archived", frame.ids[rows], values, reasons)
    frame.record(change)
    return change

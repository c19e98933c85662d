"""Long reads the console runs in its workers: a private reader, cancellation, a run's events.

The console reaches the store through the Store API and the core; these are the reads its
maintenance screens need beyond the Store's methods, named here so that tui/ never imports
the store's internals.
"""

from __future__ import annotations

from memory_console.store.readers import (
    ReadCancelled,
    active_confidences,
    cancellable,
    private_reader,
    run_change_count,
    run_changes,
    run_changes_before,
)

__all__ = [
    "ReadCancelled",
    "active_confidences",
    "cancellable",
    "private_reader",
    "run_change_count",
    "run_changes",
    "run_changes_before",
]

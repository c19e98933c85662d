"""Waiting for the console's workers in a test or a benchmark."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until every worker has finished and its messages have been handled; a worker
    that failed or that a newer one of its group cancelled counts as finished (the screens
    turn failures into notifications, which tests check)."""
    app = pilot.app
    for _ in range(20):
        await pilot.pause()
        try:
            await app.workers.wait_for_complete()
        except (WorkerFailed, WorkerCancelled):
            pass
        await pilot.pause()
        if not any(worker.is_running for worker in app.workers):
            return

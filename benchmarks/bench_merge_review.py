"""The console's merge review at 100,000 memories: seconds to its first group and to the whole
plan, as a user gets there (the preview of consolidate, then c), now and as it was (c only
once the plan is made).

    python benchmarks/bench_merge_review.py --store STORE.db

STORE is a demo store with real vectors, made once and reused:
    memory-console demo --db STORE.db --count 100000 --now 2026-06-01T00:00:00Z
    memory-console reindex --db STORE.db
Random vectors would leave only exact duplicates to merge, not the groups a store holds.

On a 2-core AMD EPYC (AVX2, AVX-512; another job sharing the cores), 10,067 groups:
eager 9.2-9.9 s to the first group and the whole plan; lazy 1.1-1.3 s to the first group and
10.6-10.9 s to the whole plan (before the review grew in batches: 3.2-3.7 s and 40-47 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_import_memory import cpu_model  # noqa: E402
from memory_console.settings import Settings  # noqa: E402
from memory_console.store import Store  # noqa: E402
from memory_console.timeutil import parse_iso  # noqa: E402
from memory_console.tui.app import make_app  # noqa: E402
from memory_console.tui.plan_request import PlanRequest  # noqa: E402
from memory_console.tui.screens.maintenance import MaintenanceScreen  # noqa: E402
from memory_console.tui.screens.preview import PreviewScreen  # noqa: E402
from memory_console.tui.screens.review import ReviewScreen  # noqa: E402

NOW = parse_iso("2026-06-01T00:00:00Z")
SIZE = (140, 40)


async def measure(path: Path, early: bool) -> tuple[float, float, int]:
    """(seconds to the review's first group, seconds to the whole plan, groups). `early`:
    c is pressed as soon as the preview offers it; else once the plan is made."""
    with Store(path, read_only=True, actor="tui") as store:
        app = make_app(Settings(db=store.path), store, now=NOW, semantic=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            # As a user gets there: the maintenance screen (m) lists the passes, then its
            # preview of consolidate is asked for.
            await pilot.press("m")
            await pilot.pause()
            assert isinstance(app.screen, MaintenanceScreen)
            request = PlanRequest(("consolidate",), "relevance", {}, NOW, NOW)
            preview = PreviewScreen(request)
            started = time.perf_counter()
            app.push_screen(preview)
            while not (preview.early_memories if early else preview.base is not None):
                await asyncio.sleep(0.01)
            # Pressed beside the wait: a pilot's press returns only once the app is idle,
            # which it is not while planning goes on.
            press = asyncio.ensure_future(pilot.press("c"))
            while not isinstance(app.screen, ReviewScreen) or app.screen.group is None:
                await asyncio.sleep(0.01)
            first = time.perf_counter() - started
            review = app.screen
            while review.scopes is not None or preview.base is None:
                await asyncio.sleep(0.05)
            whole = time.perf_counter() - started
            await press
            return first, whole, len(review.proposed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    args = parser.parse_args()
    print(f"CPU: {cpu_model()} · load average {os.getloadavg()[0]:.2f}")
    for early, name in ((False, "eager (c once the plan is made)"), (True, "lazy (c at once)")):
        first, whole, groups = asyncio.run(measure(args.store, early))
        print(
            f"{name:34} first group {first:6.2f} s · whole plan {whole:6.2f} s · {groups:,} "
            f"groups · load average {os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    main()

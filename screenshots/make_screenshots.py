"""Write an SVG (and a PNG when rsvg-convert is installed) of every console screen.

Usage: python screenshots/make_screenshots.py [OUT_DIR]
PNGs are drawn by svg_to_png.py (Pillow, else rsvg-convert when installed).

The screens show a demo store built at a fixed time, so the pictures change only when the
console or the demo data does.
"""

from __future__ import annotations

import asyncio
import importlib
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.worker import WorkerFailed

from memory_console.demo import build_demo
from memory_console.settings import Settings
from memory_console.store import MemoryFilter, Store
from memory_console.tui.app import make_app

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svg_to_png import convert  # noqa: E402  (the script's sibling, not a package)

NOW = 1_795_000_000.0  # 2026-11-17, the tests' fixed `now`
WIDE = (120, 36)
SMALL = (80, 24)
Steps = Callable[[Pilot[Any], Store], Awaitable[None]]


async def settle(pilot: Pilot[Any]) -> None:
    for _ in range(20):
        await pilot.pause()
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerFailed:
            pass
        await pilot.pause()
        if not any(worker.is_running for worker in pilot.app.workers):
            return


async def nothing(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)


async def search(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("slash", *"coffee", "enter")
    await settle(pilot)


async def story(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    rows = store.page(
        MemoryFilter(status="active", memory_type="episodic", is_protected=False),
        sort="retrieval_count",
        descending=True,
        limit=1,
    ).rows
    from memory_console.tui.screens.story import StoryScreen

    pilot.app.push_screen(StoryScreen(rows[0].id))
    await settle(pilot)


async def forget(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("space", "space", "space", "f")
    await settle(pilot)


async def purge(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("space", "space", "space", "X")
    await settle(pilot)


async def edit(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("e")
    await settle(pilot)


async def sort(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("s")
    await settle(pilot)


async def help_screen(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("question_mark")
    await settle(pilot)


async def palette(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("ctrl+p")
    await settle(pilot)
    await pilot.press(*"arch")
    await settle(pilot)


async def topic(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    owner, name, _ = store.counts_by("owner", "topic")[0]
    tree: Any = pilot.app.screen.query_one("#topics")
    node = next(n for n in tree.root.children if n.data == (owner, None, None))
    node.expand()
    tree.select_node(next(n for n in node.children if n.data == (owner, None, name)))
    await settle(pilot)


async def maintenance(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("m")
    await settle(pilot)


async def preview(pilot: Pilot[Any], store: Store) -> None:
    await maintenance(pilot, store)
    await pilot.press("ctrl+r")
    await settle(pilot)
    await pilot.press("down", "x", "down")
    await settle(pilot)


async def merge_review(pilot: Pilot[Any], store: Store) -> None:
    from memory_console.tui.plan_request import PlanRequest
    from memory_console.tui.screens.preview import PreviewScreen

    await settle(pilot)
    pilot.app.push_screen(PreviewScreen(PlanRequest(("consolidate",), "relevance", {}, NOW, NOW)))
    await settle(pilot)
    await pilot.press("c")
    await settle(pilot)


async def runs(pilot: Pilot[Any], store: Store) -> None:
    from memory_console.maintenance import apply, plan, undo

    apply(store, plan(store, ("decay", "cleanup"), now=NOW - 30 * 86400), actor="tui")
    apply(store, plan(store, ("expire", "consolidate", "decay", "cleanup"), now=NOW), actor="tui")
    undone = apply(store, plan(store, ("sensitive",), now=NOW), actor="cli")
    undo(store, undone.id, now=NOW + 300)
    await settle(pilot)
    await pilot.press("R")
    await settle(pilot)


async def health(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("H")
    await settle(pilot)


async def store_settings(pilot: Pilot[Any], store: Store) -> None:
    await settle(pilot)
    await pilot.press("comma")
    await settle(pilot)


SCREENS: list[tuple[str, tuple[int, int], Steps]] = [
    ("main", WIDE, nothing),
    ("main-80x24", SMALL, nothing),
    ("topic", WIDE, topic),
    ("search", WIDE, search),
    ("story", WIDE, story),
    ("forget", WIDE, forget),
    ("purge", WIDE, purge),
    ("edit", WIDE, edit),
    ("sort", WIDE, sort),
    ("palette", WIDE, palette),
    ("help", WIDE, help_screen),
    ("maintenance", WIDE, maintenance),
    ("preview", WIDE, preview),
    ("merge-review", WIDE, merge_review),
    ("runs", WIDE, runs),
    ("health", WIDE, health),
    ("settings", WIDE, store_settings),
]


async def shoot(
    source: Path, work: Path, name: str, size: tuple[int, int], steps: Steps, out: Path
) -> Path:
    copy = work / name / "memories.db"
    copy.parent.mkdir()
    shutil.copy(source, copy)
    with Store(copy, actor="tui") as store:
        app = make_app(Settings(db=copy), store, now=NOW, semantic=False)
        app.typing.window = 0.0  # a pilot's keys come faster than typing
        async with app.run_test(size=size) as pilot:
            await steps(pilot, store)
            target = out / f"{name}.svg"
            target.write_text(
                app.export_screenshot(title=f"memory-console: {name}"), encoding="utf-8"
            )
    return target


class FrozenClock:
    """Plans and runs record when and how long: fixed, so the pictures do not drift."""

    @staticmethod
    def time() -> float:
        return NOW + 120

    @staticmethod
    def perf_counter() -> float:
        return 0.0


def freeze_maintenance_clocks() -> None:
    for name in ("memory_console.maintenance.planner", "memory_console.maintenance.apply"):
        importlib.import_module(name).time = FrozenClock  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    freeze_maintenance_clocks()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        source = work / "demo.db"
        build_demo(source, count=2000, seed=7, now=NOW)
        for name, size, steps in SCREENS:
            svg = asyncio.run(shoot(source, work, name, size, steps, out))
            png = convert(svg)
            print(f"{svg} and {png.name}" if png else f"{svg} (PNG needs Pillow or rsvg-convert)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

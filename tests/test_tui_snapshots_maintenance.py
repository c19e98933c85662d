"""Snapshots of the maintenance screens on the fixed demo store at a fixed `now`, each at 80x24
and at 120x40."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest

from memory_console.maintenance import apply, plan, undo
from memory_console.store import Store
from memory_console.tui.plan_request import PlanRequest
from tests.helpers import NOW, SNAPSHOT_SIZES, add_duplicate_groups, console, settle
from tests.helpers import press as press_keys

SIZES = SNAPSHOT_SIZES


def press(*keys: str) -> Any:
    return press_keys(*keys, settle_each=True)


@pytest.fixture(autouse=True)
def frozen_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans and runs record how long they took and when: the same figures every time."""
    clock = SimpleNamespace(time=lambda: NOW + 120, perf_counter=lambda: 0.0)
    for module in ("memory_console.maintenance.planner", "memory_console.maintenance.apply"):
        monkeypatch.setattr(importlib.import_module(module), "time", clock)


@SIZES
def test_maintenance_screen(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    assert snap_compare(console(demo_store), terminal_size=size, run_before=press("m"))


@SIZES
def test_preview_screen(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    assert snap_compare(
        console(demo_store),
        terminal_size=size,
        run_before=press("m", "ctrl+r", "down", "x", "down"),
    )


@SIZES
def test_merge_review_screen(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    async def review(pilot: Any) -> None:
        from memory_console.tui.screens.preview import PreviewScreen

        await settle(pilot)
        pilot.app.push_screen(
            PreviewScreen(PlanRequest(("consolidate",), "relevance", {}, NOW, NOW))
        )
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        groups: Any = pilot.app.screen.query_one("#review-groups")
        groups.highlighted = 2  # the group of four duplicates, added last
        await settle(pilot)
        for key in ("space", "space", "s"):
            await pilot.press(key)
            await settle(pilot)

    add_duplicate_groups(demo_store, (4,))
    assert snap_compare(console(demo_store), terminal_size=size, run_before=review)


@SIZES
def test_runs_screen(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    apply(demo_store, plan(demo_store, ("decay", "cleanup"), now=NOW - 86400 * 30), actor="tui")
    undone = apply(
        demo_store, plan(demo_store, ("sensitive", "decay", "cleanup"), now=NOW), actor="cli"
    )
    undo(demo_store, undone.id, now=NOW + 300)
    assert snap_compare(console(demo_store), terminal_size=size, run_before=press("R"))


@SIZES
def test_health_screen(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    assert snap_compare(console(demo_store), terminal_size=size, run_before=press("H"))


@SIZES
def test_apply_confirm_dialog(snap_compare: Any, demo_store: Store, size: tuple[int, int]) -> None:
    run_before = press("m", "ctrl+r", "A")
    assert snap_compare(console(demo_store), terminal_size=size, run_before=run_before)

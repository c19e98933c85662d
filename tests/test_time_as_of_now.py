"""Confidence told as of now everywhere it is counted or listed (the memory table, health tiers,
`stats`), runs evaluated at a simulated date say so, and the forecast line stays short."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.text import Text

from memory_console.describe import forecast_line
from memory_console.maintenance import apply, list_runs, plan
from memory_console.maintenance.forecast import confidence_now, store_forecast
from memory_console.maintenance.health import project_tiers
from memory_console.policies import TIER_NAMES
from memory_console.store import Store
from memory_console.tui.run_text import run_facts
from memory_console.tui.screens.health import HealthScreen
from memory_console.tui.screens.main import MainScreen
from memory_console.tui.screens.runs import RunsScreen
from memory_console.tui.widgets.memory_table import MemoryTable
from tests.helpers import DAY, ISO_NOW, NOW, console, invoke, memory, settle

# A memory stored at 0.95 that nobody has recalled for 300 days: decay now sets far less.
STALE = {"confidence": 0.95, "base_confidence": 0.95, "decay_policy": "aggressive"}


def stale_store(path: Path) -> tuple[int, int]:
    """A store with one long-untouched episodic memory and one semantic memory (which never
    decays); their ids."""
    with Store(path, actor="test") as store:
        stale, fresh = store.add_many(
            [
                memory("moved from Berlin to Copenhagen", days_old=300, **STALE),
                memory("prefers tea", days_old=1, memory_type="semantic", confidence=0.9),
            ],
            now=NOW,
        )
    return stale, fresh


def as_of_now(path: Path, ident: int) -> float:
    with Store(path) as store:
        return confidence_now(store.require(ident), NOW, store.settings().params())


def plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


async def table_cells(path: Path, size: tuple[int, int]) -> tuple[dict[int, str], int]:
    """The confidence cell of each row and the confidence column's width, at `size`."""
    with Store(path, actor="tui") as store:
        app = console(store)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            assert isinstance(app.screen, MainScreen)
            table = app.screen.query_one(MemoryTable)
            column = next(c for c in table.columns_in_view if c.key == "confidence")
            index = table.columns_in_view.index(column)
            cells = {r.id: plain(table.get_row(str(r.id))[index]) for r in table.records}
            return cells, column.width


async def test_the_memory_table_shows_the_stored_confidence_then_the_one_as_of_now(
    db_path: Path,
) -> None:
    stale, fresh = stale_store(db_path)
    now_value = as_of_now(db_path, stale)
    assert now_value < 0.5
    for size in ((80, 24), (120, 40)):
        cells, width = await table_cells(db_path, size)
        assert cells[stale].startswith(f"0.95→{now_value:.2f}"), cells
        assert len(cells[stale]) <= width  # not cut at either size
        assert cells[fresh].startswith("0.90 ") and "→" not in cells[fresh]


async def test_search_results_and_the_page_after_them_show_the_confidence_as_of_now(
    db_path: Path,
) -> None:
    stale, _ = stale_store(db_path)
    now_value = as_of_now(db_path, stale)
    with Store(db_path, actor="tui") as store:
        app = console(store)
        # Search keeps whose and which topic first: the confidence column needs a wide screen.
        async with app.run_test(size=(148, 40)) as pilot:
            await settle(pilot)
            await pilot.press("slash", *"Copenhagen", "enter")
            await settle(pilot)
            table = app.screen.query_one(MemoryTable)
            assert table.search_mode and [r.id for r in table.records] == [stale]
            keys = [c.key for c in table.columns_in_view]
            cell = plain(table.get_row(str(stale))[keys.index("confidence")])
            assert cell.startswith(f"0.95→{now_value:.2f}")
            await pilot.press("escape")  # back to the page: its own values again
            await settle(pilot)
            assert not table.search_mode and len(table.records) == 2
            keys = [c.key for c in table.columns_in_view]
            cell = plain(table.get_row(str(stale))[keys.index("confidence")])
            assert cell.startswith(f"0.95→{now_value:.2f}")


def test_health_tiers_count_by_the_confidence_as_of_now(db_path: Path) -> None:
    stale, fresh = stale_store(db_path)
    now_value = as_of_now(db_path, stale)
    with Store(db_path) as store:
        projection = project_tiers(store, NOW)
        figures = store_forecast(store, NOW)
    top = TIER_NAMES.index(">=0.9")
    low = next(
        t for t in range(len(TIER_NAMES)) if projection.tiers[0][projection.ids == stale][0] == t
    )
    assert low != top and projection.count(0, top) == 1  # only the semantic memory is >= 0.9
    assert list(figures["current"].values()) == [projection.count(0, t) for t in range(5)]
    target = projection.target(0, low)
    assert "as of now" in target.label
    with Store(db_path) as store:
        assert target.finder is not None and target.finder(store) == [stale]
    assert now_value < 0.5


async def test_the_health_screen_says_its_tiers_are_by_confidence_as_of_now(
    db_path: Path,
) -> None:
    stale_store(db_path)
    with Store(db_path, actor="tui") as store:
        app = console(store)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("H")
            await settle(pilot)
            assert isinstance(app.screen, HealthScreen)
            labels = [str(label.content) for label in app.screen.query("Label")]
            assert any("by confidence as of now" in label for label in labels), labels


def test_stats_counts_tiers_by_the_confidence_as_of_now(db_path: Path) -> None:
    stale, _ = stale_store(db_path)
    now_value = as_of_now(db_path, stale)
    db = ["--db", str(db_path), "--now", ISO_NOW]
    text = invoke(["stats", *db])
    assert text.code == 0, text.err
    assert "by confidence as of now" in text.out
    figures = json.loads(invoke(["stats", "--json", *db]).out)
    # The stored values as before; the tiers as of now beside them.
    assert figures["confidence_tiers"]["0.9-1.0"]["count"] == 2
    now_tiers = figures["confidence_tiers_now"]
    assert now_tiers["0.9-1.0"] == {"count": 1, "mean": 0.9}
    bucket = next(name for name, v in now_tiers.items() if name != "0.9-1.0" and v["count"])
    assert now_tiers[bucket] == {"count": 1, "mean": round(now_value, 4)}


def two_runs(path: Path) -> tuple[int, int]:
    """A run evaluated 90 days ahead of the clock and one evaluated now: their ids."""
    with Store(path, actor="test") as store:
        store.add_many([memory(f"episode {i}", days_old=100 + i) for i in range(5)], now=NOW)
        ahead = apply(store, plan(store, ("decay",), now=NOW + 90 * DAY), actor="cli")
        today = apply(store, plan(store, ("decay",), now=NOW), actor="cli")
    return ahead.id, today.id


def frozen_clock(monkeypatch: object) -> None:
    """Runs are applied at NOW by the clock (a minute later), so NOW is not simulated."""
    import importlib
    from types import SimpleNamespace

    clock = SimpleNamespace(time=lambda: NOW + 60, perf_counter=lambda: 0.0)
    for module in ("memory_console.maintenance.planner", "memory_console.maintenance.apply"):
        monkeypatch.setattr(importlib.import_module(module), "time", clock)  # type: ignore[attr-defined]


def test_run_facts_say_a_run_was_evaluated_as_of_a_simulated_date(
    db_path: Path, monkeypatch: object
) -> None:
    frozen_clock(monkeypatch)
    ahead, today = two_runs(db_path)
    with Store(db_path) as store:
        runs = {run.id: run for run in list_runs(store, 10)}
    from rich.console import Console

    def facts(ident: int) -> str:
        out = Console(width=200, record=True, color_system=None)
        out.print(run_facts(runs[ident]))
        return out.export_text()

    assert "evaluated as of 2027-02-16 (simulated)" in facts(ahead)
    assert "simulated" not in facts(today)


async def test_the_runs_screen_marks_a_simulated_evaluation_date(
    db_path: Path, monkeypatch: object
) -> None:
    frozen_clock(monkeypatch)
    ahead, today = two_runs(db_path)
    with Store(db_path, actor="tui") as store:
        app = console(store)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("R")
            await settle(pilot)
            assert isinstance(app.screen, RunsScreen)
            table = app.screen.table
            column = [c.key.value for c in table.columns.values()].index("now")
            cells = {
                run.id: plain(table.get_row_at(row)[column])
                for row, run in enumerate(app.screen.runs)
            }
    assert cells[ahead] == "2027-02-16 simulated"
    assert cells[today] == "2026-11-18"


def test_cli_runs_marks_a_simulated_evaluation_date(db_path: Path, monkeypatch: object) -> None:
    frozen_clock(monkeypatch)
    two_runs(db_path)
    out = invoke(["runs", "--db", str(db_path)]).out
    assert out.count("(simulated)") == 1


def test_the_forecast_line_has_at_most_three_dated_steps_and_the_floor(db_path: Path) -> None:
    stale, _ = stale_store(db_path)
    with Store(db_path) as store:
        record = store.require(stale)
        line = forecast_line(record, NOW - 250 * DAY, store.settings().params())
    steps, _, floor = line.partition("; ")
    dated = re.findall(r"\d{4}-\d{2}-\d{2} \d\.\d\d", steps)
    assert steps.startswith("now ") and len(dated) == 3, line
    assert floor.startswith("reaches the floor on ")
    assert len(line) <= 2 * 62  # two lines of the story's value column at 80 columns


def test_health_counts_the_promotion_candidates_decay_counts(db_path: Path) -> None:
    """Promotion needs confidence above 0.6: a memory recalled often but idle for two years is
    above it stored and below it as of now (0.9 x 0.974^24 = 0.48). Health counted it
    (stored), decay did not."""
    faded = {
        **memory("recalled often, long ago", days_old=800),
        "confidence": 0.9,
        "base_confidence": 0.9,
        "retrieval_count": 6,
        "last_accessed_at": NOW - 720 * DAY,
    }
    fresh = {**memory("recalled often, lately", days_old=40), "retrieval_count": 6}
    fresh["last_accessed_at"] = NOW - DAY
    with Store(db_path) as store:
        store.add_many([faded, fresh], now=NOW)
        planned = plan(store, ["decay"], now=NOW)
        counted = planned.figures["decay"]["promotion_candidates"]
        assert counted == 1
        assert len(project_tiers(store, NOW).candidates) == counted


def test_health_months_ahead_are_calendar_months(db_path: Path) -> None:
    """ "+12 mo" is the same date a year on (365 days from NOW), as `stats --now` at that date
    counts it, not 12 periods of 30 days; the 31st falls on a shorter month's last day."""
    from memory_console.timeutil import add_months, parse_iso

    assert add_months(NOW, 12) - NOW == 365 * DAY
    assert add_months(parse_iso("2026-01-31T08:00:00Z"), 1) == parse_iso("2026-02-28T08:00:00Z")
    assert add_months(parse_iso("2024-02-29T00:00:00Z"), 12) == parse_iso("2025-02-28T00:00:00Z")
    with Store(db_path, actor="test") as store:
        # Confidences and ages spread finely, so some memory crosses a tier between day 360
        # and day 365 (or between 30-day periods and calendar months at 1, 3 and 6).
        store.add_many(
            [
                memory(
                    f"event number {n}",
                    days_old=1 + n % 97,
                    confidence=0.4 + 0.6 * n / 400,
                    base_confidence=0.4 + 0.6 * n / 400,
                    decay_policy=("aggressive", "standard")[n % 2],
                )
                for n in range(400)
            ],
            now=NOW,
        )
    with Store(db_path) as store:
        ahead = project_tiers(store, NOW)
        for months in (1, 3, 6, 12):
            then = project_tiers(store, add_months(NOW, months))
            assert (ahead.tiers[months] == then.tiers[0]).all(), months

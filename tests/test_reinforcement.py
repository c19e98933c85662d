"""A recall never erases decay: the boost starts from the confidence as of the access, under
the store's policy, wherever the access is recorded (store, agent API, console)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_console.api import MemoryAPI
from memory_console.store import Store
from memory_console.tui.story_data import load_story
from tests.helpers import DAY, NOW, invoke, memory

CURRENT = 0.70 * 0.95**6  # episodic, never recalled, idle 200 days: six 30-day periods
WORKED = CURRENT + 0.03  # the episodic boost from there: 0.545, not 0.73


def idle_store(path: Path) -> int:
    """One episodic memory at 0.70, created 200 days before NOW and never recalled."""
    with Store(path) as store:
        return store.add_many(
            [memory("the user is building an iron farm", days_old=200, confidence=0.7)],
            now=NOW - 200 * DAY,
        )[0]


def test_the_boost_starts_from_the_confidence_as_of_the_access(db_path: Path) -> None:
    ident = idle_store(db_path)
    with Store(db_path) as store:
        store.record_access([ident], now=NOW)
        record = store.require(ident)
        event = store.accesses(ident)[0]
    assert record.confidence == pytest.approx(WORKED, abs=1e-9)
    assert round(record.confidence, 3) == 0.545
    assert record.base_confidence == record.confidence and record.retrieval_count == 1
    assert record.last_accessed_at == NOW
    assert event.before["confidence"] == 0.7
    assert event.before["current"] == pytest.approx(CURRENT, abs=1e-9)
    assert event.after["confidence"] == pytest.approx(WORKED, abs=1e-9)


def test_the_worked_figure_through_the_agent_api_and_the_cli(db_path: Path) -> None:
    ident = idle_store(db_path)
    with MemoryAPI(db_path, semantic=False) as api:
        found = api.recall("iron farm", now=NOW)
    assert [hit.id for hit in found] == [ident]
    shown = invoke(["show", str(ident), "--db", str(db_path), "--json", "--now", "2026-11-18"])
    assert shown.code == 0, shown.err
    data = json.loads(shown.out)
    assert round(data["confidence"], 3) == 0.545
    accessed = [e for e in data["history"] if e["kind"] == "accessed"]
    assert round(accessed[0]["before"]["current"], 3) == 0.515


def test_an_access_never_lowers_the_as_of_now_value(db_path: Path) -> None:
    with Store(db_path) as store:
        ids = store.add_many(
            [
                memory("high episodic", days_old=0, confidence=0.97),
                memory("a fact", days_old=400, confidence=0.8, memory_type="semantic"),
                memory("kept", days_old=400, confidence=0.6, is_protected=True),
            ],
            now=NOW,
        )
        store.record_access(ids, now=NOW)
        after = store.get_many(ids)
    assert after[ids[0]].confidence == 0.97  # above the episodic cap: kept, never lowered
    assert after[ids[1]].confidence == pytest.approx(0.85)  # semantic does not decay
    assert after[ids[2]].confidence == pytest.approx(0.63)  # protected does not decay


def test_the_periodic_policy_boosts_from_its_own_as_of_now_value(db_path: Path) -> None:
    ident = idle_store(db_path)
    with Store(db_path) as store:
        store.set_setting("decay_policy", "periodic", "alice", now=NOW)
        store.record_access([ident], now=NOW)
        record = store.require(ident)
    periods = 200 // 7  # whole weeks idle
    assert record.confidence == pytest.approx(min(1.0, 0.7 * 0.95**periods + 0.2))


def test_a_policy_parameter_in_the_store_reaches_the_boost(db_path: Path) -> None:
    ident = idle_store(db_path)
    with Store(db_path) as store:
        store.set_setting("decay_policy", "periodic", now=NOW)
        store.set_setting("periodic.boost", "0.05", now=NOW)
        store.record_access([ident], now=NOW)
        record = store.require(ident)
    assert record.confidence == pytest.approx(0.7 * 0.95 ** (200 // 7) + 0.05)


def test_the_console_story_draws_the_fade_then_the_jump(db_path: Path) -> None:
    ident = idle_store(db_path)
    with Store(db_path) as store:
        store.record_access([ident], now=NOW)
        story = load_story(store, ident, NOW + DAY)
    values = [round(value, 3) for _, value in story.trajectory]
    assert values == [0.7, 0.515, 0.545, 0.545]
    assert round(story.forecast.points[0][1], 3) == 0.545
    assert story.record.confidence == pytest.approx(WORKED, abs=1e-9)


def test_the_forecast_follows_the_store_policy(db_path: Path) -> None:
    ident = idle_store(db_path)
    with Store(db_path) as store:
        assert load_story(store, ident, NOW).forecast.policy == "relevance"
        store.set_setting("decay_policy", "periodic", now=NOW)
        story = load_story(store, ident, NOW)
    assert story.forecast.policy == "periodic"
    assert story.forecast.points[0][1] == pytest.approx(0.7 * 0.95 ** (200 // 7))

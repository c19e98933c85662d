"""The store keeps its settings (shown, set and recorded through `config`), maintenance takes
them under a run's flags, decay_enabled false plans nothing, and `maintain --due` runs each
default pass only when its interval has passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_console.store import Store
from tests.helpers import ISO_NOW, NOW, invoke, memory, one_error_line


def filled(path: Path) -> Path:
    with Store(path) as store:
        store.add_many(
            [memory(f"trip number {i} to the coast", days_old=100 + i) for i in range(6)],
            now=NOW,
        )
    return path


def test_config_shows_every_setting_with_its_default(db_path: Path) -> None:
    filled(db_path)
    shown = invoke(["config", "--db", str(db_path), "--json"])
    assert shown.code == 0, shown.err
    data = json.loads(shown.out)
    assert data["decay_enabled"] == {"value": True, "source": "default"}
    assert data["decay_policy"]["value"] == "relevance"
    # The bank TTLs are the expire_banks pass's parameters, settings like every parameter.
    assert data["expire_banks.working_ttl_hours"] == {"value": 1.0, "source": "default"}
    assert data["expire_banks.short_term_ttl_hours"]["value"] == 24.0
    assert (
        data["consolidate.min_cosine"]["value"] == 0.85
    )  # the threshold chosen on the labelled pairs
    assert data["update_threshold"]["value"] == 0.55
    assert data["interval.decay"]["value"] == 6 * 3600
    assert data["interval.expire-banks"]["value"] == 3600
    assert data["interval.consolidate"]["value"] == 7 * 86400
    assert data["periodic.boost"] == {"value": 0.2, "source": "default"}


def test_config_set_records_who_and_when_and_history_lists_it(db_path: Path) -> None:
    filled(db_path)
    db = ["--db", str(db_path)]
    done = invoke(
        ["config", "set", "interval.decay", "12h", "--by", "alice", "--now", ISO_NOW, *db]
    )
    assert done.code == 0, done.err
    assert "interval.decay: default -> 12h (by alice" in done.out
    invoke(["config", "set", "decay_policy", "periodic", "--by", "bob", *db])
    data = json.loads(invoke(["config", "--json", *db]).out)
    assert data["interval.decay"] == {"value": 43200.0, "source": "store"}
    assert data["decay_policy"] == {"value": "periodic", "source": "store"}
    history = json.loads(invoke(["config", "history", "--json", *db]).out)
    assert [(h["key"], h["by"]) for h in history] == [
        ("decay_policy", "bob"),
        ("interval.decay", "alice"),
    ]
    assert history[1]["before"] is None and history[1]["at"] == ISO_NOW
    back = invoke(["config", "set", "decay_policy", "default", *db])
    assert back.code == 0 and "periodic -> default" in back.out
    with Store(db_path) as store:
        assert store.settings().decay_policy == "relevance"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("nope", "1", "unknown setting 'nope'"),
        ("decay_policy", "fast", "must be one of relevance, periodic, exponential"),
        ("decay_enabled", "maybe", "must be true or false"),
        ("relevance.floor", "2", "relevance parameter floor=2.0 must be in [0, 1)"),
        ("interval.decay", "soon", "must be a number"),
    ],
)
def test_config_set_refuses_a_bad_key_or_value_in_one_line(
    db_path: Path, key: str, value: str, message: str
) -> None:
    filled(db_path)
    assert message in one_error_line(invoke(["config", "set", key, value, "--db", str(db_path)]))
    with Store(db_path) as store:
        assert store.setting_history() == []


def test_config_set_is_refused_read_only(db_path: Path) -> None:
    filled(db_path)
    refused = invoke(
        ["--read-only", "config", "set", "decay_enabled", "false", "--db", str(db_path)]
    )
    assert "refused" in one_error_line(refused)


def test_the_store_policy_is_the_default_and_a_flag_wins_for_one_run(db_path: Path) -> None:
    filled(db_path)
    db = ["--db", str(db_path), "--now", ISO_NOW, "--json"]
    invoke(["config", "set", "decay_policy", "periodic", "--db", str(db_path)])
    invoke(["config", "set", "periodic.rate", "0.5", "--db", str(db_path)])
    stored = json.loads(invoke(["decay", "--dry-run", *db]).out)
    assert stored["policy"] == "periodic" and stored["params"]["periodic"]["rate"] == 0.5
    flagged = json.loads(invoke(["decay", "--dry-run", "--rate", "0.8", *db]).out)
    assert flagged["params"]["periodic"]["rate"] == 0.8
    relevance = json.loads(invoke(["decay", "--dry-run", "--policy", "relevance", *db]).out)
    assert relevance["policy"] == "relevance"


def test_decay_disabled_plans_nothing_and_says_so(db_path: Path) -> None:
    filled(db_path)
    db = ["--db", str(db_path), "--now", ISO_NOW]
    before = json.loads(invoke(["decay", "--dry-run", "--json", *db]).out)
    assert before["decayed"] == 6
    invoke(["config", "set", "decay_enabled", "false", "--db", str(db_path)])
    after = json.loads(invoke(["decay", "--dry-run", "--json", *db]).out)
    assert after["changed"] == 0 and after["figures"]["decay"] == {"disabled": 1}
    told = invoke(["decay", "--dry-run", *db])
    assert "decay is disabled in the store's settings" in told.out


def test_maintain_due_runs_each_pass_once_per_interval(db_path: Path) -> None:
    filled(db_path)
    db = ["--db", str(db_path)]
    preview = invoke(["maintain", "--due", "--dry-run", "--now", ISO_NOW, *db])
    assert "decay: due: never applied (every 6h)" in preview.out
    first = invoke(["maintain", "--due", "--apply", "--now", ISO_NOW, "--json", *db])
    assert first.code == 0, first.err
    assert json.loads(first.out)["run_id"] == 1
    second = invoke(["maintain", "--due", "--apply", "--now", ISO_NOW, *db])
    assert second.code == 0, second.err
    assert "nothing due; nothing planned or written" in second.out
    assert "decay: not due: last applied in run 1" in second.out
    runs = json.loads(invoke(["runs", "--json", *db]).out)
    assert len(runs) == 1
    later = invoke(["maintain", "--due", "--dry-run", "--now", "2026-11-18T18:00:00Z", *db])
    assert "decay: due: last applied in run 1" in later.out
    assert "expire: not due" in later.out and "consolidate: not due" in later.out


def test_the_agent_api_takes_the_stores_update_threshold(db_path: Path) -> None:
    """One setting every process reads: an agent opened later matches id-less updates at the
    threshold the operator set, unless it is given one itself."""
    from memory_console.api import MemoryAPI

    filled(db_path)
    assert invoke(["config", "set", "update_threshold", "0.7", "--db", str(db_path)]).code == 0
    with MemoryAPI(db_path, semantic=False) as agent:
        assert agent.update_threshold == 0.7
    with MemoryAPI(db_path, semantic=False, update_threshold=0.5) as agent:
        assert agent.update_threshold == 0.5

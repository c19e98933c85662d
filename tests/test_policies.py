"""Tests of the pure policy math against its rules and worked figures (docs/ARCHITECTURE.md,
"Policies").

Micro-benchmark (run by hand, not asserted): on one laptop core relevance_decay over
1,000,000 rows takes about 0.05 s; quota_evict with integer owner ids about 0.13 s when no
owner is over quota and 0.6 s when all are (string owners add ~1.5 s for np.unique):

    python -m timeit -s "import numpy as np, memory_console.policies as P; n=10**6; \\
    r=np.random.default_rng(0); now=1.7e9; c=now-r.uniform(0,4e7,n); b=r.uniform(0,1,n); \\
    k=r.integers(0,20,n); a=np.zeros(n,bool)" "P.relevance_decay(b, k, c, c, a, now)"
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import memory_console.policies as P
from tests.helpers import DAY, NOW

ROOT = Path(__file__).resolve().parents[1]


def days_ago(*days: float) -> np.ndarray:
    return NOW - np.asarray(days, dtype=np.float64) * DAY


def relevance_at(base: float, retrievals: int, days_since_access: float) -> float:
    result = P.relevance_decay(
        [base], [retrievals], days_ago(days_since_access), days_ago(400), [False], NOW
    )
    return float(result.confidence[0])


# relevance -------------------------------------------------------------------------------


def test_relevance_worked_figures() -> None:
    assert relevance_at(1.0, 0, 60) == pytest.approx(0.9025)
    assert_allclose(P.relevance_rate([2, 15, 0, 10], [False] * 4), [0.958, 0.99, 0.95, 0.99])
    assert relevance_at(1.0, 2, 30) == pytest.approx(0.958)
    assert round(relevance_at(1.0, 2, 90), 3) == 0.879
    assert relevance_at(1.0, 15, 30) == pytest.approx(0.99)
    assert round(relevance_at(1.0, 15, 90), 3) == 0.970


def test_relevance_aggressive_rates_and_partial_periods() -> None:
    assert_allclose(P.relevance_rate([0, 5, 20], [True] * 3), [0.90, 0.94, 0.98])
    assert relevance_at(0.8, 0, 29.9) == 0.8
    assert relevance_at(0.8, 0, 59.99) == pytest.approx(0.8 * 0.95)


def test_relevance_floor_and_never_raising() -> None:
    assert relevance_at(1.0, 0, 3000) == pytest.approx(0.10)
    assert relevance_at(0.05, 0, 3000) == 0.05


def test_relevance_periods_use_creation_when_never_accessed() -> None:
    periods = P.relevance_periods([np.nan, NOW - 31 * DAY, NOW + DAY], days_ago(95, 95, 95), NOW)
    assert_array_equal(periods, [3, 1, 0])


def test_relevance_is_idempotent_and_schedule_independent() -> None:
    rng = np.random.default_rng(7)
    n = 200
    base = rng.uniform(0.1, 1.0, n)
    retrievals = rng.integers(0, 20, n)
    created = days_ago(*rng.uniform(0, 300, n))
    last = np.where(rng.random(n) < 0.3, np.nan, created + rng.uniform(0, 5, n) * DAY)
    aggressive = rng.random(n) < 0.2
    start, end = NOW, NOW + 120 * DAY

    once = P.relevance_decay(base, retrievals, last, created, aggressive, end).confidence
    again = P.relevance_decay(base, retrievals, last, created, aggressive, end).confidence
    assert_array_equal(once, again)

    # A daily job: each day the pass recomputes from base_confidence (which only access
    # changes), writing confidence; after 120 days it equals a single run at the end.
    confidence = base.copy()
    for day in range(121):
        confidence = P.relevance_decay(
            base, retrievals, last, created, aggressive, start + day * DAY
        ).confidence
    assert_array_equal(confidence, once)


def test_relevance_eligibility() -> None:
    mask = P.relevance_eligible(
        np.array(["active", "active", "active", "archived", "active", "active", "active"]),
        np.array(
            [
                "standard",
                "aggressive",
                "none",
                "standard",
                "standard",
                "standard",
                "pending_deletion",
            ]
        ),
        np.array([False, False, False, False, True, False, False]),
        np.array(
            ["episodic", "procedural", "episodic", "episodic", "episodic", "semantic", "episodic"]
        ),
    )
    assert_array_equal(mask, [True, True, False, False, False, False, False])
    with_periods = P.relevance_eligible(
        ["active"] * 2, ["standard"] * 2, [False] * 2, ["episodic"] * 2, periods=[0, 1]
    )
    assert_array_equal(with_periods, [False, True])


def test_cleanup_flags_floor_and_age() -> None:
    flags = P.cleanup_flags(
        [0.10, 0.10 + 5e-10, 0.11, 0.10, 0.10],
        days_ago(120, 120, 120, 80, 120),
        NOW,
        [True, True, True, True, False],
    )
    assert_array_equal(flags, [True, True, False, False, False])


def test_promotion() -> None:
    args = (
        np.array(["episodic", "episodic", "episodic", "semantic", "episodic", "episodic"]),
        np.array([5, 12, 4, 12, 12, 12]),
        np.array([0.61, 0.82, 0.9, 0.9, 0.6, 0.9]),
        np.array(["standard", "standard", "standard", "standard", "standard", "none"]),
        np.array([False] * 6),
    )
    assert_array_equal(P.promotion_candidates(*args), [True, True, False, False, False, False])
    assert_array_equal(P.promotion_auto(*args), [False, True, False, False, False, False])
    protected = P.promotion_candidates(*args[:4], np.array([True] * 6))
    assert not protected.any()
    archived = P.promotion_candidates(*args, status=np.array(["archived"] * 6))
    assert not archived.any()
    assert_allclose(P.promoted_confidence([0.7, 0.9, 0.97]), [0.8, 0.95, 0.97])


def test_floor_time_matches_decay() -> None:
    base, retrievals, last = np.array([0.78, 1.0, 0.1]), np.array([2, 0, 3]), days_ago(10, 0, 5)
    created = days_ago(200, 50, 300)
    when = P.relevance_floor_time(base, retrievals, last, created, [False] * 3)
    at = P.relevance_decay(base, retrievals, last, created, [False] * 3, float(when[0])).confidence
    before = P.relevance_decay(
        base, retrievals, last, created, [False] * 3, float(when[0]) - 1
    ).confidence
    assert at[0] == pytest.approx(0.10) and before[0] > 0.10
    assert when[2] == last[2]


# reinforcement ---------------------------------------------------------------------------


def test_reinforcement_caps_and_never_lowers() -> None:
    confidence = np.array([0.5, 0.96, 0.5, 0.96, 0.5, 0.93, 0.97])
    types = np.array(
        ["semantic", "semantic", "procedural", "procedural", "episodic", "episodic", "episodic"]
    )
    assert_allclose(P.reinforce(confidence, types), [0.55, 0.99, 0.54, 0.97, 0.53, 0.95, 0.97])
    assert P.reinforce_one(0.97, "episodic") == 0.97
    assert_allclose(P.reinforce([0.5, 0.9], types[:2], policy="periodic"), [0.7, 1.0])
    with pytest.raises(ValueError, match="memory_type"):
        P.reinforce([0.5], ["dream"])


# periodic --------------------------------------------------------------------------------


def test_periodic_weekly_decay_and_archive() -> None:
    created = days_ago(100, 100, 100)
    last = np.array([NOW - 14 * DAY, np.nan, NOW - 300 * DAY])
    result = P.periodic_decay([1.0, 1.0, 0.5], last, created, NOW)
    assert_array_equal(result.periods, [2, 14, 14])
    assert_allclose(result.confidence, [0.95**2, 0.95**14, 0.5 * 0.95**14])
    assert_array_equal(P.periodic_archive([0.09, 0.1, 0.5]), [True, False, False])
    when = P.periodic_archive_time([0.5], [np.nan], days_ago(0), P.PeriodicParams())
    k = (when[0] - days_ago(0)[0]) / (7 * DAY)
    assert 0.5 * 0.95**k < 0.10 <= 0.5 * 0.95 ** (k - 1)


# exponential -----------------------------------------------------------------------------


def test_exponential_factor_and_effective() -> None:
    assert P.decay_factor(days_ago(100), NOW)[0] == pytest.approx(0.368, abs=5e-4)
    assert_allclose(P.effective_score([0.8], days_ago(0), NOW, similarity=[0.5]), [0.4])


def test_prune_by_age_score_then_top_n_per_owner() -> None:
    params = P.ExponentialParams(prune_to_top_n=2)
    owner = np.array(["a", "a", "a", "a", "b", "b", "a"])
    importance = np.array([0.9, 0.8, 0.7, 0.2, 0.6, 0.9, 0.95])
    created = days_ago(1, 1, 1, 1, 1, 40, 40)
    evictable = np.array([True, True, True, True, True, True, False])
    breakdown = P.prune_breakdown(owner, importance, created, NOW, params, evictable)
    assert_array_equal(breakdown.too_old, [False, False, False, False, False, True, False])
    assert_array_equal(breakdown.too_weak, [False, False, False, True, False, False, False])
    # Owner a has 4 survivors; the protected row keeps its place although it ranks 3rd,
    # so the two lowest evictable rows go.
    assert_array_equal(breakdown.beyond_top_n, [False, True, True, False, False, False, False])
    assert_array_equal(
        P.prune(owner, importance, created, NOW, params, evictable), breakdown.archive
    )
    rows = [2, 3, 5]
    reasons = P.prune_reasons(
        owner[rows],
        breakdown.effective[rows],
        created[rows],
        breakdown.too_old[rows],
        breakdown.too_weak[rows],
        NOW,
        params,
    )
    assert reasons == [
        "owner a beyond top 2 (effective 0.69)",
        "effective 0.20 below 0.3",
        "40 days old, over 30",
    ]


# importance ------------------------------------------------------------------------------


def test_importance_score_expire_and_quota() -> None:
    score = P.importance_score(
        [1.0, 0.5, 0.0], [10, 5, 0], [NOW, np.nan, np.nan], days_ago(10, 30, 400), NOW
    )
    assert_allclose(score, [1.0, 0.2 + 0.15 + 0.3 * np.exp(-1), 0.3 * np.exp(-400 / 30)])
    expired = P.expire_mask([0.05, 0.05, 0.2], days_ago(140, 60, 140), NOW)
    assert_array_equal(expired, [True, False, False])
    assert P.expire_reasons([0.06], days_ago(140), NOW) == ["score 0.06 below 0.1 and 140 days old"]

    params = P.ImportanceParams(max_memories=2)
    owner = np.array(["alice", "bob", "alice", "alice", "alice", "bob"])
    scores = np.array([0.5, 0.1, 0.2, 0.9, 0.21, 0.3])
    evict = P.quota_evict(owner, scores, params)
    assert_array_equal(evict, [False, False, True, False, True, False])
    protected = P.quota_evict(owner, scores, params, evictable=scores != 0.2)
    assert_array_equal(protected, [True, False, False, False, True, False])
    assert P.quota_reasons(["alice"], [0.21]) == ["owner alice over quota 1000 (score 0.21)"]


def test_quota_matches_a_per_owner_reference() -> None:
    rng = np.random.default_rng(3)
    owner = rng.choice(np.array(["ann", "bo", "cy", "di"]), 300)
    score = rng.integers(0, 20, 300) / 20  # many ties
    evictable = rng.random(300) < 0.8
    params = P.ImportanceParams(max_memories=50)
    expected = np.zeros(300, dtype=bool)
    for name in np.unique(owner):
        rows = np.flatnonzero(owner == name)
        excess = max(0, rows.size - 50)
        movable = sorted((score[i], i) for i in rows if evictable[i])
        expected[[i for _, i in movable[:excess]]] = True
    assert_array_equal(P.quota_evict(owner, score, params, evictable), expected)


def test_rank_within_groups_ties_keep_row_order() -> None:
    _, codes = P.group_codes(["x", "y", "x", "x", "y"])
    assert_array_equal(P.rank_within_groups(codes, [0.5, 0.1, 0.5, 0.2, 0.1]), [1, 0, 2, 0, 1])


# confidence language and tiers -----------------------------------------------------------


def test_confidence_labels_and_tiers() -> None:
    values = [0.95, 0.9, 0.8 + 0.1, 0.89, 0.7, 0.5, 0.49, 0.3, 0.29]
    expected = (
        ["stated explicitly"] * 3 + ["high confidence"] * 2 + ["inferred"] + ["uncertain"] * 3
    )
    assert [P.confidence_label(v) for v in values] == expected
    assert P.confidence_labels(values).tolist() == expected
    assert_array_equal(P.tier_index(values), [0, 0, 0, 1, 1, 2, 3, 3, 4])
    assert_array_equal(P.tier_counts(values), [3, 2, 1, 2, 1])
    assert len(P.TIER_NAMES) == len(P.TIER_EDGES) + 1


# forecast --------------------------------------------------------------------------------


def test_forecast_relevance_columns_and_frozen_rows() -> None:
    base = np.array([1.0, 0.8])
    forecast = P.forecast_relevance(
        base,
        [0, 0],
        days_ago(45, 45),
        days_ago(100, 100),
        [False, False],
        NOW,
        3,
        decays=[True, False],
        confidence=[1.0, 0.8],
    )
    assert_allclose(forecast[0], [0.95, 0.95**2, 0.95**3, 0.95**4])
    assert_allclose(forecast[1], [0.8] * 4)
    times = P.forecast_times(days_ago(45), days_ago(100), NOW, 3)
    assert_allclose((times[0] - NOW) / DAY, [0, 15, 45, 75])


def test_forecast_memory_relevance_and_never_decaying() -> None:
    common = dict(
        base_confidence=0.78,
        confidence=0.78,
        retrieval_count=2,
        last_accessed_at=NOW,
        created_at=NOW - 200 * DAY,
        now=NOW,
    )
    episodic = P.forecast_memory(
        **common, memory_type="episodic", decay_policy="standard", is_protected=False
    )
    assert episodic.text() == "0.78 -> 0.75 -> 0.72 -> 0.69 -> 0.66 -> 0.63 -> 0.60"
    assert episodic.points[1][0] == NOW + 30 * DAY
    assert episodic.floor_date == NOW + 48 * 30 * DAY
    assert episodic.action_date == episodic.floor_date
    for frozen in (
        dict(memory_type="semantic", decay_policy="standard", is_protected=False),
        dict(memory_type="episodic", decay_policy="none", is_protected=False),
        dict(memory_type="episodic", decay_policy="standard", is_protected=True),
    ):
        result = P.forecast_memory(**common, **frozen)
        assert result.floor_date is None and result.action is None
        assert {value for _, value in result.points} == {0.78}


def test_forecast_memory_periodic_and_exponential() -> None:
    periodic = P.forecast_memory(
        confidence=0.5,
        base_confidence=0.5,
        retrieval_count=0,
        last_accessed_at=None,
        created_at=NOW,
        memory_type="semantic",
        decay_policy="standard",
        is_protected=False,
        now=NOW,
        policy="periodic",
        periods_ahead=2,
    )
    assert_allclose([v for _, v in periodic.points], [0.5, 0.475, 0.45125])
    assert periodic.action == "archived" and periodic.floor_date is not None
    exponential = P.forecast_memory(
        confidence=0.5,
        base_confidence=0.5,
        retrieval_count=0,
        last_accessed_at=None,
        created_at=NOW,
        memory_type="episodic",
        decay_policy="standard",
        is_protected=False,
        now=NOW,
        policy="exponential",
        importance=0.6,
    )
    assert exponential.measure == "effective score"
    assert exponential.floor_date == pytest.approx(NOW + np.log(2) / 0.01 * DAY)
    assert exponential.action_date == NOW + 30 * DAY
    with pytest.raises(ValueError, match="importance"):
        P.forecast_memory(
            **{
                **dict(
                    confidence=0.5,
                    base_confidence=0.5,
                    retrieval_count=0,
                    last_accessed_at=None,
                    created_at=NOW,
                    memory_type="episodic",
                    decay_policy="standard",
                    is_protected=False,
                    now=NOW,
                )
            },
            policy="exponential",
        )


def test_project_tiers() -> None:
    confidence = np.array([0.92, 0.95, 0.6])
    decays = np.array([True, False, True])
    projection = P.project_tiers(
        confidence,
        confidence,
        [0, 0, 0],
        [NOW] * 3,
        [NOW] * 3,
        [False] * 3,
        decays,
        NOW,
        months=(0, 1, 12),
    )
    assert sorted(projection) == [0, 1, 12]
    assert_array_equal(projection[0], [2, 0, 1, 0, 0])
    assert_array_equal(projection[1], [1, 1, 1, 0, 0])
    assert_array_equal(projection[12], [1, 0, 0, 2, 0])  # 0.92 -> 0.497, 0.6 -> 0.324


# parameters ------------------------------------------------------------------------------


def test_params_round_trip_overrides_and_validation() -> None:
    for name, kind in P.POLICIES.items():
        params = kind()
        assert kind.from_dict(params.to_dict()) == params
        assert P.params_for(name, {}) == params
    assert set(P.POLICIES) == {"relevance", "periodic", "exponential"}
    relevance = P.params_for("relevance", {"floor": "0.2", "period_days": 7})
    assert isinstance(relevance, P.RelevanceParams)
    assert relevance.floor == 0.2 and relevance.period_days == 7.0
    assert P.params_for("importance", {"max_memories": "50"}).to_dict()["max_memories"] == 50
    with pytest.raises(ValueError, match="unknown relevance parameter.*flor"):
        P.params_for("relevance", {"flor": 0.2})
    with pytest.raises(ValueError, match="unknown policy"):
        P.params_for("linear", {})
    for bad in (
        {"base_rate": 0.0},
        {"base_rate": 1.5},
        {"floor": 1.0},
        {"period_days": 0},
        {"rate_span": 0.2},
        {"resistance_retrievals": 2.5},
        {"floor": "x"},
        {"floor": float("nan")},
        {"floor": True},
    ):
        with pytest.raises(ValueError, match="relevance parameter"):
            P.RelevanceParams.from_dict(bad)
    with pytest.raises(ValueError, match="periodic parameter rate"):
        P.PeriodicParams(rate=1.01)
    with pytest.raises(ValueError, match="exponential parameter prune_to_top_n"):
        P.ExponentialParams(prune_to_top_n=0)


def test_reasons_text() -> None:
    assert P.decay_reasons([3, 1], [0.958, 0.95], [NOW, np.nan]) == [
        "3 periods since last access at rate 0.958",
        "1 period since creation at rate 0.950",
    ]
    assert P.cleanup_reasons(days_ago(120.5), NOW) == ["at the floor and 120 days old"]
    assert P.promotion_reasons([12], [0.82]) == ["retrieved 12 times at confidence 0.82"]
    assert P.archive_reasons([0.08]) == ["confidence 0.08 below 0.1"]


# architecture ----------------------------------------------------------------------------


def test_import_keeps_ui_and_database_out() -> None:
    code = (
        "import sys, memory_console.policies; "
        "print(sorted(m for m in ('textual', 'sqlmodel', 'sqlite3') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"

"""Search quality on the labelled set: hybrid search never worse than its best half, per kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.search_quality import (
    KINDS,
    LABELLED,
    QUERIES,
    build_store,
    calibration_table,
    evaluate_store,
    table,
)


@pytest.mark.slow
def test_hybrid_at_least_best_mode_per_kind(tmp_path: Path) -> None:
    assert len(LABELLED) >= 100
    assert {query.kind for query in LABELLED} == set(KINDS)
    path = tmp_path / "labelled.db"
    build_store(path)
    results, calibration = evaluate_store(path)
    print("\n" + table(results) + "\n" + calibration_table(calibration))
    for kind in KINDS:
        scores = {r.mode: r for r in results if r.kind == kind}
        hybrid = scores.pop("hybrid")
        assert hybrid.recall_at_5 >= max(r.recall_at_5 for r in scores.values()) - 0.02, kind
        assert hybrid.mrr >= max(r.mrr for r in scores.values()) - 0.02, kind
    # The relevance words as calibrated: no unanswerable query's best hit reads "strong", and
    # at most 5% of the right answers read "unrelated".
    absent = [word for _, word in calibration.unanswerable]
    assert len(absent) == sum(query.kind == "absent" for query in QUERIES)
    assert "strong" not in absent
    words = [word for _, word in calibration.right]
    assert words.count("unrelated") <= 0.05 * len(words)

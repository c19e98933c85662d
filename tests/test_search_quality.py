"""Search quality on the labelled set written here: exact terms are found by hybrid search as by
its best half; paraphrased questions, where the keyword half finds little, stay within reach of
the semantic half. (The fusion is tuned on public conversations: benchmarks/search_locomo.py.)"""

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
    # Rank fusion weighs both halves alike on questions, so where one half fails (the keyword
    # half on paraphrases: 0.69 recall@5 and 0.55 MRR, against 0.88 and 0.82) hybrid lands
    # between the two, nearer the better: measured 0.81 and 0.71. The score fusion tuned on
    # this set kept the semantic half's figures, and lost to the keyword half on LoCoMo.
    margin = {"exact": 0.02, "question": 0.08}
    mrr_margin = {"exact": 0.02, "question": 0.13}
    for kind in KINDS:
        scores = {r.mode: r for r in results if r.kind == kind}
        hybrid = scores.pop("hybrid")
        best = max(r.recall_at_5 for r in scores.values())
        assert hybrid.recall_at_5 >= best - margin[kind], kind
        assert hybrid.mrr >= max(r.mrr for r in scores.values()) - mrr_margin[kind], kind
        assert hybrid.recall_at_5 > min(r.recall_at_5 for r in scores.values()), kind
    # The relevance words as calibrated: no unanswerable query's best hit reads "strong", and
    # at most 5% of the right answers read "unrelated".
    absent = [word for _, word in calibration.unanswerable]
    assert len(absent) == sum(query.kind == "absent" for query in QUERIES)
    assert "strong" not in absent
    words = [word for _, word in calibration.right]
    assert words.count("unrelated") <= 0.05 * len(words)

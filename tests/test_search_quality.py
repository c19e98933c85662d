"""Search quality on the demo store: hybrid must beat keyword search on the labelled set."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.search_quality import (
    DEMO_COUNT,
    DEMO_NOW,
    DEMO_SEED,
    LABELLED,
    evaluate_store,
    table,
)
from memory_console.ingest.demo import build_demo


@pytest.mark.slow
def test_hybrid_beats_keyword(tmp_path: Path) -> None:
    assert len(LABELLED) >= 30
    path = tmp_path / "demo.db"
    build_demo(path, count=DEMO_COUNT, seed=DEMO_SEED, now=DEMO_NOW)
    results = {quality.mode: quality for quality in evaluate_store(path)}
    print("\n" + table(list(results.values())))
    keyword, hybrid = results["keyword"], results["hybrid"]
    assert hybrid.recall_at_5 > keyword.recall_at_5
    assert hybrid.mrr > keyword.mrr
    assert results["semantic"].recall_at_5 >= 0.6

"""Labelled consolidation pairs: loading them into a store and scoring what a run merged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory_console.store import Store
from tests.harness.clock import DAY, NOW

PAIRS = Path(__file__).resolve().parent.parent / "data" / "consolidation_pairs.jsonl"


def consolidation_pairs() -> list[dict[str, Any]]:
    """The labelled pairs: should two memories merge (the same fact said again) or not."""
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]


def add_pairs(store: Store, pairs: list[dict[str, Any]]) -> None:
    """Each pair as two memories of an owner of its own (`pair-0007`), so pairs never meet;
    b is told `days_apart` days after a."""
    rows = []
    for number, pair in enumerate(pairs):
        told = NOW - 40 * DAY
        for text, at in ((pair["a"], told - pair.get("days_apart", 0) * DAY), (pair["b"], told)):
            rows.append(
                {
                    "owner": f"pair-{number:04d}",
                    "topic": "general",
                    "memory_type": pair.get("memory_type", "semantic"),
                    "content": text,
                    "keywords": [],
                    "created_at": at,
                }
            )
    store.add_many(rows, now=NOW)


def merged_pairs(store: Store, min_cosine: float | None = None) -> set[int]:
    """The numbers of the pairs the consolidate pass merges at NOW."""
    from memory_console.maintenance import build_params, plan

    overrides = {} if min_cosine is None else {"min_cosine": min_cosine}
    params = build_params(["consolidate"], overrides=overrides, settings=store.settings())
    proposed = plan(store, ["consolidate"], params, now=NOW)
    return {int(m.fields["owner"].removeprefix("pair-")) for m in proposed.new_memories}


def precision_recall(pairs: list[dict[str, Any]], merged: set[int]) -> tuple[float, float]:
    """Precision and recall of "should merge" (1.0 where nothing was merged or expected)."""
    wanted = {n for n, pair in enumerate(pairs) if pair["merge"]}
    right = len(wanted & merged)
    return (right / len(merged) if merged else 1.0, right / len(wanted) if wanted else 1.0)

"""Consolidation quality on a labelled set: precision and recall of "should merge".

    python -m benchmarks.consolidation_quality

The set (tests/data/consolidation_pairs.jsonl) holds pairs of memory texts, each labelled
whether the two state the same fact said again (merge) or not: exact duplicates and
paraphrases (merge), distinct dated episodes, changed values, negations, facts that share
words and refinements that add a detail (no merge); drawn from the demo's templates and
written by hand. Each pair becomes two memories of an owner of its own, embedded with the
real model (without keywords, as a hand-written memory comes); the consolidate pass plans at
its default settings and at a small sweep of min_cosine. Precision comes first.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.bench_import_memory import cpu_model
from memory_console.embed.search import SearchEngine
from memory_console.maintenance.passes.consolidate import ConsolidateParams
from memory_console.store import Store
from tests.harness.pairs import add_pairs, consolidation_pairs, merged_pairs, precision_recall

SWEEP = (0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.92, 0.95)


def main() -> None:
    pairs = consolidation_pairs()
    print(f"CPU: {cpu_model()}")
    kinds = Counter((pair["kind"], pair["merge"]) for pair in pairs)
    print(f"{len(pairs)} pairs: " + ", ".join(f"{k} {n}" for (k, _), n in sorted(kinds.items())))
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "pairs.db") as store:
        add_pairs(store, pairs)
        started = time.perf_counter()
        SearchEngine(store).prepare_semantic()
        print(f"embedded {2 * len(pairs)} memories in {time.perf_counter() - started:.1f} s")
        no_vectors = merged_pairs_without_vectors(pairs)
        precision, recall = precision_recall(pairs, no_vectors)
        print(
            f"without vectors (exact duplicates only): precision {precision:.3f} "
            f"recall {recall:.3f}"
        )
        default = ConsolidateParams().min_cosine
        for threshold in SWEEP:
            merged = merged_pairs(store, threshold)
            precision, recall = precision_recall(pairs, merged)
            mark = "  (default)" if threshold == default else ""
            print(
                f"min_cosine {threshold:.2f}: precision {precision:.3f} recall {recall:.3f}{mark}"
            )
        merged = merged_pairs(store)
        print("at the default, per kind (merged / pairs):")
        for kind in sorted({pair["kind"] for pair in pairs}):
            numbers = [n for n, pair in enumerate(pairs) if pair["kind"] == kind]
            print(f"  {kind:16} {len(merged & set(numbers)):3} / {len(numbers)}")
        wrong = sorted(n for n in merged if not pairs[n]["merge"])
        for number in wrong:
            print(f"  merged, should not: {pairs[number]['a']!r} / {pairs[number]['b']!r}")


def merged_pairs_without_vectors(pairs: list[dict[str, object]]) -> set[int]:
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "bare.db") as store:
        add_pairs(store, pairs)  # type: ignore[arg-type]
        return merged_pairs(store)


if __name__ == "__main__":
    main()

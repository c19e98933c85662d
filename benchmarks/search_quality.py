"""Search quality on a labelled set: recall@5 and MRR per mode and per query kind, the fusion's
parameters and the relevance words' calibration.

    python benchmarks/search_quality.py [--db PATH]

The set (tests/data/search/, its README says where it comes from) holds queries of two kinds
over the demo store's showcase owner plus hand-written memories: paraphrased questions, where
meaning matters, and exact terms (names, ids, error codes, quoted phrases), where keywords
matter; and unanswerable queries, used only to calibrate the relevance words. A hit is right
when its content holds one of the query's labels.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.harness.search_quality import (
    build_store,
    calibration_table,
    cpu,
    evaluate_store,
    fusion_parameters,
    table,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a store built by this script (default: build one)")
    args = parser.parse_args()
    if args.db and Path(args.db).exists():
        path = Path(args.db)
    else:
        path = Path(args.db or Path(tempfile.mkdtemp(prefix="search-quality-")) / "demo.db")
        build_store(path)
    results, calibration = evaluate_store(path)
    print(f"cpu: {cpu()}")
    print(fusion_parameters())
    print(table(results))
    print(calibration_table(calibration))


if __name__ == "__main__":
    main()

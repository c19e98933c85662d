"""What the calibration chooses on this machine, beside every alternative and the baselines.

    python benchmarks/bench_calibration.py --cache DIR [--texts 512] [--rows 100000] [--rounds 5]

Prints, in one run: the CPU model and flags; each embedder graph variant's texts/s with its
model id and its largest cosine difference from the file as shipped (the baseline); each index
scan's ms per exact top-10 query at --rows rows beside plain numpy `X @ q` + argpartition
(the baseline); what a fresh calibration chooses and how long it takes; and a CLI search in a
fresh process per command on a 2,000-memory store (bench_cold_search.py's builder), with the
model files hashed at every start (as before the verified-file record) and with the record.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import bench_cold_search  # noqa: E402
from benchmarks.bench_embed import memory_sentences  # noqa: E402
from benchmarks.bench_import_memory import cpu_model  # noqa: E402


def embedders(texts: list[str], rounds: int) -> None:
    import onnxruntime
    import tokenizers

    from memory_console.embed import calibration
    from memory_console.embed.embedder import VARIANTS, _open_tokenizer, _VariantOpener
    from memory_console.embed.embedder import read_manifest as manifest_of

    manifest = manifest_of()
    opener = _VariantOpener(manifest, onnxruntime, _open_tokenizer(manifest, tokenizers), 2)
    built = {name: opener.open(name) for name in VARIANTS}
    rates: dict[str, list[float]] = {name: [] for name in built}
    vectors = {}
    for name, embedder in built.items():
        assert embedder is not None, name
        vectors[name] = embedder.embed(texts)  # warm-up, and the vectors compared
    for _ in range(rounds):  # interleaved, so that a busy moment hits every variant alike
        for name, embedder in built.items():
            assert embedder is not None
            started = time.perf_counter()
            embedder.embed(texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
    print(f"\nembedder, {len(texts)} texts, batch 32, 2 threads (median of {rounds} rounds)")
    for name, embedder in built.items():
        assert embedder is not None
        difference = calibration.cosine_difference(vectors[name], vectors["as shipped"])
        baseline = "  (baseline)" if name == "as shipped" else ""
        print(
            f"  {name:<36} {statistics.median(rates[name]):7.0f} texts/s  "
            f"max |cos diff| vs shipped {difference:.1e}  {embedder.model_id}{baseline}"
        )


def index(rows: int, rounds: int) -> None:
    from memory_console.embed.index import VectorIndex

    dim, queries = 384, 20
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((rows, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    targets = matrix[rng.choice(rows, queries, replace=False)]
    for number, target in enumerate(targets):  # each query has close neighbours
        near = target + 0.3 * rng.standard_normal((12, dim), dtype=np.float32)
        matrix[number * 12 : number * 12 + 12] = near / np.linalg.norm(near, axis=1)[:, None]

    def numpy_scan(query: np.ndarray) -> None:
        scores = matrix @ query
        np.argpartition(scores, rows - 10)[rows - 10 :]

    scans = {"numpy X @ q + argpartition (baseline)": numpy_scan}
    for name, scan_from in (("VectorIndex float32", rows + 1), ("VectorIndex int8 codes", 0)):
        built = VectorIndex(dim, capacity=rows, int8_scan_from=scan_from)
        built.add(np.arange(rows), matrix)
        scans[name] = lambda query, built=built: built.search(query, 10)
    print(f"\nindex, {rows:,} x {dim}, exact top 10 (best of {rounds} rounds of {queries})")
    for name, scan in scans.items():
        scan(targets[0])
        best = float("inf")
        for _ in range(rounds):
            started = time.perf_counter()
            for target in targets:
                scan(target)
            best = min(best, time.perf_counter() - started)
        print(f"  {name:<40} {1000 * best / queries:7.2f} ms/query")


def calibrate() -> None:
    from memory_console.embed.embedder import Embedder

    started = time.perf_counter()
    loaded = Embedder.load(recalibrate=True)
    seconds = time.perf_counter() - started
    chosen = loaded.calibration
    assert chosen is not None
    print(
        f"\ncalibration (a fresh one: load and measure {seconds:.1f} s, measuring alone "
        f"{chosen.seconds:.1f} s)"
    )
    for kind, picked, figures in (
        ("embedder", chosen.embedder, chosen.embedder_figures),
        ("index", chosen.index, chosen.index_figures),
    ):
        for figure in figures:
            mark = "chosen" if figure.name == picked else "      "
            refused = f"  refused: {figure.refused}" if figure.refused else ""
            print(f"  {kind:<9}{mark} {figure.name:<30} {figure.speed:8.2f} {figure.unit}{refused}")


def cold_search(cache: Path, rounds: int) -> None:
    from memory_console.embed import verified

    path = cache / "calibration-2000.db"
    if not path.exists():
        bench_cold_search.build_store(path, 2_000)
    record = Path(os.environ["MEMORY_CONSOLE_CACHE_DIR"]) / verified.RECORD_NAME
    bench_cold_search.ENV.update(bench_cold_search.child_environment(cache))
    query = bench_cold_search.QUERIES[0]
    bench_cold_search.search(path, query)  # page cache and kept rewrite warm
    figures: dict[str, list[float]] = {"hashed at every start": [], "verified-file record": []}
    for _ in range(rounds):
        for name in figures:
            if name == "hashed at every start":
                record.unlink(missing_ok=True)
            else:
                bench_cold_search.search(path, query)  # makes the record
            figures[name].append(bench_cold_search.search(path, query)[0])
    print(f"\nCLI search, fresh process per command, 2,000 memories (median of {rounds})")
    for name, runs in figures.items():
        print(f"  {name:<24} {statistics.median(runs):6.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="where the store is kept")
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    # A cache directory of the run's own: the user's calibration and record are not touched.
    os.environ["MEMORY_CONSOLE_CACHE_DIR"] = tempfile.mkdtemp(prefix="calibration-")
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores")
    embedders(memory_sentences(args.texts), args.rounds)
    index(args.rows, args.rounds)
    calibrate()
    cold_search(args.cache, args.rounds)


if __name__ == "__main__":
    main()

"""Benchmark of the embedder (throughput, query latency) and of vector search, vs sqlite-vec."""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_console.embed import Embedder, VectorIndex  # noqa: E402

SUBJECTS = [
    "The user",
    "Maria",
    "The on-call engineer",
    "The customer from Lyon",
    "Our team lead",
    "The user's partner",
    "David from finance",
    "The design team",
]
PREDICATES = [
    "prefers dark mode in every code editor",
    "is allergic to peanuts and most shellfish",
    "works remotely from Lisbon for most of the year",
    "wants the weekly status report sent as a PDF",
    "asked to be reminded about the dentist appointment",
    "uses PostgreSQL for the billing service",
    "plans a trip to Japan with two young children",
    "dislikes meetings scheduled before ten in the morning",
    "keeps the project budget in a shared spreadsheet",
    "moved the deployment pipeline to GitHub Actions",
    "is learning Spanish with an online tutor",
    "needs the quarterly report reviewed by the legal team",
    "drinks oat milk and avoids anything with added sugar",
    "runs the staging cluster on three small virtual machines",
    "prefers short answers with code examples first",
    "pays the rent on the first working day of the month",
    "wants every pull request to have at least two reviewers",
    "stores passwords in a hardware-backed password manager",
    "is training for a half marathon in October",
    "calls the vendor only through the support portal",
]
TIMES = [
    "since last spring",
    "every Monday morning",
    "until the end of the quarter",
    "after the March release",
    "for the next three weeks",
    "since moving to the new office",
    "on most weekdays",
    "whenever the budget allows",
]
REASONS = [
    "because the old setup kept failing",
    "so that the whole team can follow along",
    "as agreed in the planning meeting yesterday",
    "to avoid the late fees from last year",
    "which was mentioned twice this week",
    "according to the notes from the last call",
    "after a long discussion with the manager",
    "to keep the evenings free for family",
]
QUESTIONS = [
    "what does {s} prefer",
    "when does {s} want the report",
    "which tools does {s} use at work",
    "does {s} have any food allergies",
    "where does {s} work from",
    "how should I answer {s}",
    "what is {s} planning this year",
    "what did {s} ask me to remember",
]


def memory_sentences(count: int, seed: int = 7) -> list[str]:
    """Realistic memory texts of about 20 words, reproducible from the seed."""
    rng = random.Random(seed)
    return [
        f"{rng.choice(SUBJECTS)} {rng.choice(PREDICATES)} {rng.choice(TIMES)}, "
        f"{rng.choice(REASONS)}."
        for _ in range(count)
    ]


def questions(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(QUESTIONS).format(s=rng.choice(SUBJECTS).lower()) + "?" for _ in range(count)
    ]


def each_ms(run: Callable[[Any], object], items: Iterable[Any]) -> list[float]:
    """Milliseconds taken by run(item) for each item."""
    samples = []
    for item in items:
        start = time.perf_counter()
        run(item)
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples


def percentile(samples: list[float], share: float) -> float:
    return float(np.percentile(np.asarray(samples), share))


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Report:
    """Rows of (section, measure, value, target) printed as one table at the end."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, section: str, measure: str, value: str, target: str = "") -> None:
        self.rows.append((section, measure, value, target))
        say(f"  {section}: {measure} = {value}")

    def print(self) -> None:
        headers = ("part", "measure", "value", "target")
        widths = [max(len(row[i]) for row in [headers, *self.rows]) for i in range(4)]
        line = "  ".join("-" * width for width in widths)
        print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        print(line)
        for row in self.rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


def bench_embedder(args: argparse.Namespace, report: Report) -> None:
    embedder = Embedder.load(args.manifest, threads=args.threads)
    texts = memory_sentences(args.texts)
    tokens = [len(encoding.ids) for encoding in embedder.tokenizer.encode_batch(texts[:500])]
    words = statistics.mean(len(text.split()) for text in texts)
    section = f"embed {args.texts} texts"
    report.add(section, "words / tokens per text", f"{words:.1f} / {statistics.mean(tokens):.1f}")
    embedder.embed(texts[:64], batch_size=args.batch_size)

    start = time.perf_counter()
    embedder.embed(texts, batch_size=args.batch_size)
    longest = time.perf_counter() - start
    rate = len(texts) / longest
    report.add(
        section,
        f"texts/s, {embedder.variant}, batch {args.batch_size}, {args.threads} threads",
        f"{rate:.0f}",
        ">= 230",
    )
    # Baseline: the graph as shipped, whose int8 weights onnxruntime folds into float32.
    float_embedder = Embedder(
        embedder.manifest,
        _plain_session(embedder, args.threads),
        embedder.tokenizer,
        args.threads,
    )
    float_embedder.embed(texts[:64], batch_size=args.batch_size)
    start = time.perf_counter()
    float_vectors = float_embedder.embed(texts, batch_size=args.batch_size)
    plain = time.perf_counter() - start
    report.add(section, "texts/s, graph as shipped (float32 products)", f"{len(texts) / plain:.0f}")
    report.add(section, f"speed-up of {embedder.variant} (chosen here)", f"{plain / longest:.2f}x")
    cosines = np.sum(embedder.embed(texts[:500]) * float_vectors[:500], axis=1)
    report.add(
        section,
        "cosine to the float32 vectors, mean / min",
        f"{cosines.mean():.4f} / {cosines.min():.4f}",
    )

    padding = dict(embedder.tokenizer.padding or {})
    fixed_kwargs = {
        key: padding[key] for key in ("pad_id", "pad_token", "pad_type_id") if key in padding
    }
    embedder.tokenizer.enable_padding(length=128, **fixed_kwargs)
    try:
        start = time.perf_counter()
        embedder.embed(texts, batch_size=args.batch_size)
        fixed = time.perf_counter() - start
    finally:
        embedder.tokenizer.enable_padding(**fixed_kwargs)
    report.add(section, "texts/s, fixed padding to 128 (as shipped)", f"{len(texts) / fixed:.0f}")
    report.add(section, "speed-up of padding to longest", f"{fixed / longest:.2f}x", "~3x")

    queries = questions(args.queries)
    for query in queries[:10]:
        embedder.embed_query(query)
        float_embedder.embed_query(query)
    samples = each_ms(embedder.embed_query, queries)
    report.add(
        f"embed_query x{len(queries)}",
        "latency p50 / p95 ms",
        f"{percentile(samples, 50):.2f} / {percentile(samples, 95):.2f}",
        "p50 <= 6",
    )
    baseline = each_ms(float_embedder.embed_query, queries)
    report.add(
        f"embed_query x{len(queries)}",
        "latency p50 ms, graph as shipped",
        f"{percentile(baseline, 50):.2f}",
    )


def _plain_session(embedder: Embedder, threads: int) -> Any:
    """An onnxruntime session of the model file exactly as shipped (no graph rewrite)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        str(embedder.manifest.onnx.path), sess_options=options, providers=["CPUExecutionProvider"]
    )


def random_unit_chunks(count: int, dim: int, seed: int, chunk: int) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(seed)
    for start in range(0, count, chunk):
        vectors = rng.standard_normal((min(chunk, count - start), dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        yield vectors


def open_sqlite_vec() -> Any | None:
    try:
        import apsw
        import sqlite_vec
    except ImportError:
        return None
    connection = apsw.Connection(":memory:")
    connection.enable_load_extension(True)
    connection.load_extension(sqlite_vec.loadable_path())
    connection.enable_load_extension(False)
    return connection


def bench_index(count: int, args: argparse.Namespace, report: Report) -> None:
    dim = 384
    section = f"search {count:,} x {dim}"
    connection = open_sqlite_vec()
    if connection is not None:
        connection.execute(
            f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{dim}] distance_metric=cosine)"
        )
    index = VectorIndex(dim)
    index.reserve(count)
    # Baseline in the same run: the same vectors scanned in float32 only (no 8-bit codes).
    float_index = VectorIndex(dim, int8_scan_from=count + 1)
    float_index.reserve(count)
    build_index = build_vec = 0.0
    say(f"building {section} ...")
    for chunk_number, vectors in enumerate(random_unit_chunks(count, dim, seed=3, chunk=50_000)):
        ids = np.arange(chunk_number * 50_000, chunk_number * 50_000 + len(vectors))
        start = time.perf_counter()
        index.add(ids, vectors)
        build_index += time.perf_counter() - start
        float_index.add(ids, vectors)
        if connection is not None:
            start = time.perf_counter()
            with connection:
                connection.executemany(
                    "INSERT INTO vec(rowid, embedding) VALUES (?, ?)",
                    zip(ids.tolist(), (row.tobytes() for row in vectors), strict=True),
                )
            build_vec += time.perf_counter() - start
    report.add(section, "VectorIndex build (add) s", f"{build_index:.2f}")
    report.add(section, "VectorIndex memory MiB", f"{index.nbytes / 2**20:.0f}")

    queries = list(random_unit_chunks(args.searches, dim, seed=5, chunk=args.searches))[0]
    for query in queries[:3]:
        index.search(query, 10)
    results = [index.search(query, 10)[0] for query in queries]
    ours = percentile(each_ms(lambda query: index.search(query, 10), queries), 50)
    target = "~6" if count <= 100_000 else "35-50"
    report.add(section, "VectorIndex top-10 p50 ms", f"{ours:.1f}", target)
    for query in queries[:3]:
        float_index.search(query, 10)
    exact = sum(
        np.array_equal(float_index.search(query, 10)[0], ours_ids)
        for query, ours_ids in zip(queries, results, strict=True)
    )
    scan = percentile(each_ms(lambda query: float_index.search(query, 10), queries), 50)
    report.add(section, "float32 scan top-10 p50 ms (baseline)", f"{scan:.1f}")
    report.add(section, "float32 scan / VectorIndex time", f"{scan / ours:.1f}x")
    report.add(section, "same top-10 as the float32 scan", f"{exact}/{len(queries)} queries")
    allowed = np.random.default_rng(8).choice(count, count // 100, replace=False)
    filtered = percentile(each_ms(lambda query: index.search(query, 10, allowed), queries), 50)
    report.add(section, "VectorIndex top-10 p50 ms, 1% allowed_ids", f"{filtered:.1f}")

    if connection is None:
        report.add(section, "sqlite-vec", "not installed: pip install -e '.[bench]'")
        return
    report.add(section, "sqlite-vec vec0 insert s", f"{build_vec:.2f}")
    sql = "SELECT rowid FROM vec WHERE embedding MATCH ? AND k = 10 ORDER BY distance"

    def knn(query: np.ndarray) -> list[int]:
        return [row[0] for row in connection.execute(sql, (query.tobytes(),))]

    shared = sum(
        len(set(ours_ids.tolist()) & set(knn(query)))
        for query, ours_ids in zip(queries, results, strict=True)
    )
    theirs = percentile(each_ms(knn, queries), 50)
    report.add(section, "sqlite-vec vec0 KNN top-10 p50 ms", f"{theirs:.1f}")
    report.add(section, "sqlite-vec / VectorIndex time", f"{theirs / ours:.1f}x")
    report.add(section, "same top-10 ids as sqlite-vec", f"{shared / (10 * len(queries)):.1%}")
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", type=int, default=2000, help="texts for the throughput run")
    parser.add_argument("--queries", type=int, default=200, help="queries for the latency run")
    parser.add_argument("--searches", type=int, default=50, help="searches per index size")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--manifest", default=None, help="model manifest (default: models/)")
    parser.add_argument("--big", action="store_true", help="also search 1,000,000 vectors")
    parser.add_argument("--skip-embed", action="store_true", help="only benchmark the index")
    args = parser.parse_args()

    report = Report()
    machine = (
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}"
    )
    say(machine)
    load_at_start = os.getloadavg()[0]
    if not args.skip_embed:
        bench_embedder(args, report)
    for count in (100_000, 1_000_000) if args.big else (100_000,):
        bench_index(count, args, report)
    if open_sqlite_vec() is None:
        print("sqlite-vec comparison skipped: install it with pip install -e '.[bench]'")
    # Other work on the machine slows every figure: the load average says how quiet it was.
    load = f"{load_at_start:.2f} / {os.getloadavg()[0]:.2f}"
    report.add("machine", "1-minute load average, start / end", load, "< 0.5")
    print(machine)
    print()
    report.print()


if __name__ == "__main__":
    main()

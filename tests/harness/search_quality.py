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

import json
import platform
from dataclasses import dataclass
from pathlib import Path

from memory_console.embed.hits import SearchHit
from memory_console.embed.search import SearchEngine
from memory_console.store import MemoryFilter, Store

OWNER = "alice"
DEMO_COUNT = 2000
DEMO_SEED = 7
DEMO_NOW = 1_795_000_000.0
DATA = Path(__file__).resolve().parent.parent / "data" / "search"
MODES = ("keyword", "semantic", "hybrid")
KINDS = ("question", "exact")


@dataclass(frozen=True)
class Query:
    text: str
    kind: str  # question, exact, or absent (nothing in the store answers it)
    labels: tuple[str, ...]


def load_queries() -> list[Query]:
    rows = [json.loads(line) for line in (DATA / "queries.jsonl").read_text().splitlines()]
    return [Query(row["query"], row["kind"], tuple(row["labels"])) for row in rows if row]


QUERIES = load_queries()
LABELLED = tuple(query for query in QUERIES if query.kind in KINDS)


@dataclass(frozen=True)
class Quality:
    mode: str
    kind: str
    queries: int
    recall_at_5: float
    mrr: float


@dataclass(frozen=True)
class Calibration:
    """The cosine of each right answer, and of each unanswerable query's best hit, and the
    relevance word of each."""

    right: list[tuple[float | None, str]]
    unanswerable: list[tuple[float | None, str]]


def build_store(path: Path) -> None:
    """The demo store with the hand-written memories added to its showcase owner."""
    from memory_console.demo import build_demo

    build_demo(path, count=DEMO_COUNT, seed=DEMO_SEED, now=DEMO_NOW)
    memories = [json.loads(line) for line in (DATA / "memories.jsonl").read_text().splitlines()]
    with Store(path, actor="bench") as store:
        store.add_many([{**m, "owner": OWNER} for m in memories], now=DEMO_NOW - 30 * 86_400)


def right(content: str, query: Query) -> bool:
    return any(label in content for label in query.labels)


def search(engine: SearchEngine, query: Query, mode: str, k: int = 10) -> list[SearchHit]:
    return engine.search(
        query.text,
        mode=mode,
        k=k,
        memory_filter=MemoryFilter(owner=OWNER, status="active"),
        now=DEMO_NOW,
    )


def evaluate(engine: SearchEngine, mode: str, kind: str) -> Quality:
    """recall@5 and MRR (first right hit within the top 10) of one mode on one kind."""
    queries = [query for query in LABELLED if query.kind == kind]
    found, reciprocal = 0, 0.0
    for query in queries:
        for rank, hit in enumerate(search(engine, query, mode), start=1):
            if right(hit.record.content, query):
                found += rank <= 5
                reciprocal += 1.0 / rank
                break
    return Quality(mode, kind, len(queries), found / len(queries), reciprocal / len(queries))


def calibrate(engine: SearchEngine) -> Calibration:
    """Hybrid search's first right hit per labelled query, and best hit per unanswerable one."""
    answers, unanswerable = [], []
    for query in QUERIES:
        hits = search(engine, query, "hybrid")
        if query.kind == "absent":
            unanswerable += [(hits[0].cosine, hits[0].relevance)] if hits else []
            continue
        first = next((hit for hit in hits if right(hit.record.content, query)), None)
        if first is not None:
            answers.append((first.cosine, first.relevance))
    return Calibration(answers, unanswerable)


def evaluate_store(path: Path) -> tuple[list[Quality], Calibration]:
    """Embed the store (if needed) and score every mode on every kind."""
    with Store(path, actor="bench") as store:
        engine = SearchEngine(store)
        engine.prepare_semantic()
        results = [evaluate(engine, mode, kind) for kind in KINDS for mode in MODES]
        return results, calibrate(engine)


def cpu() -> str:
    """The CPU's model and the vector flags that matter to the embedder and the index scan."""
    model, flags = platform.processor() or platform.machine(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() in ("flags", "Features") and not flags:
                wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "fma", "neon", "asimd")
                flags = " ".join(f for f in value.split() if f in wanted)
    except OSError:
        pass
    return f"{model} ({flags or 'no listed vector flags'})"


def fusion_parameters() -> str:
    from memory_console.embed.fusion import PART_WEIGHTS, RRF_K
    from memory_console.embed.hits import STRONG_COSINE, WEAK_COSINE
    from memory_console.embed.search import CANDIDATES

    weights = "; ".join(
        f"{kind}: " + ", ".join(f"{part} {weight}" for part, weight in parts.items())
        for kind, parts in PART_WEIGHTS.items()
    )
    return (
        f"fusion: reciprocal rank, k {RRF_K}, the top {CANDIDATES} of each part, weights per "
        f"query kind ({weights})\n"
        f"relevance: strong at cosine >= {STRONG_COSINE} or every query word held, "
        f"weak at cosine >= {WEAK_COSINE} or some query word held, else unrelated; never "
        "stronger than a hit ranked above"
    )


def table(results: list[Quality]) -> str:
    lines = ["kind      queries mode      recall@5    MRR"]
    lines += [
        f"{r.kind:<9} {r.queries:7} {r.mode:<9} {r.recall_at_5:8.3f} {r.mrr:6.3f}" for r in results
    ]
    return "\n".join(lines)


def calibration_table(calibration: Calibration) -> str:
    lines = ["relevance word   right answers   best hit of unanswerable"]
    for word in ("strong", "weak", "unrelated"):
        answers = sum(1 for _, w in calibration.right if w == word)
        absent = sum(1 for _, w in calibration.unanswerable if w == word)
        lines.append(f"{word:<16} {answers:13} {absent:26}")
    return "\n".join(lines)

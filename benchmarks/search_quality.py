"""Search quality on the demo store: a labelled set of paraphrased queries, recall@5 and MRR.

    python benchmarks/search_quality.py [--db PATH]

Each query is a paraphrase (not a copy) of what a memory of the demo's showcase owner says;
a hit is relevant when its content contains one of the query's labels. Prints a table of
recall@5 (share of queries with a relevant memory in the top 5) and MRR for keyword,
semantic and hybrid search.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path

from memory_console.embed.search import SearchEngine
from memory_console.store import MemoryFilter, Store

OWNER = "alice"
DEMO_COUNT = 2000
DEMO_SEED = 7
DEMO_NOW = 1_795_000_000.0

LABELLED: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "what editor colours does the user like",
        ("dark mode in the editor", "dark editor theme", "dark mode when coding"),
    ),
    ("which game is she constructing a metal farm in", ("iron farm",)),
    ("when is the recurring team meeting", ("Weekly team sync",)),
    ("how can I reach Sarah by mail", ("sarah.chen@",)),
    ("what city does the user call home", ("Lives in Lisbon",)),
    ("what nickname should I use for her", ("prefers to be called Ali",)),
    ("which language should answers be written in", ("Prefers replies in English",)),
    ("what database was picked for invoicing", ("PostgreSQL for the billing",)),
    ("message broker choice for order events", ("Kafka over RabbitMQ",)),
    ("how does she ship a new version to production", ("make release",)),
    ("checks to run before pushing code", ("ruff check",)),
    ("food she must avoid", ("allergic to peanuts",)),
    ("who is her boss", ("Manager is Daniel Okafor",)),
    ("how long should responses be", ("short answers with bullet points",)),
    ("what company employs her", ("Works at Northwind",)),
    ("why did the golem farm break", ("stopped working after the 1.21 update",)),
    ("bread baking request", ("sourdough recipe",)),
    ("gaming nights with family", ("Minecraft with her brother",)),
    ("intermittent test failure she is investigating", ("flaky test",)),
    ("in which language should code comments be written", ("code comments in Portuguese",)),
    ("continuous integration migration plan", ("Jenkins to GitHub Actions",)),
    ("does she have siblings", ("Sister Marta", "with her brother")),
    ("does she own any animals", ("cat called Pixel",)),
    ("who approves changes to the billing tables", ("review by Sarah Chen",)),
    ("home network credentials", ("Wi-Fi password",)),
    ("secret for the test environment", ("Staging api key",)),
    ("how should code samples look", ("Python examples with type hints",)),
    ("what does she do for a living", ("data engineer",)),
    ("which time zone is she in", ("Europe/Lisbon",)),
    ("nut-free cooking", ("allergic to peanuts",)),
    ("where are login accounts stored", ("database of record for auth",)),
    ("villagers lost their sleeping spots", ("stopped working after the 1.21 update",)),
)


@dataclass(frozen=True)
class Quality:
    mode: str
    recall_at_5: float
    mrr: float


def evaluate(engine: SearchEngine, mode: str, k: int = 10) -> Quality:
    """recall@5 and MRR (first relevant hit within the top k) of one search mode."""
    found, reciprocal = 0, 0.0
    for query, labels in LABELLED:
        hits = engine.search(
            query,
            mode=mode,
            k=k,
            memory_filter=MemoryFilter(owner=OWNER, status="active"),
            now=DEMO_NOW,
        )
        for rank, hit in enumerate(hits, start=1):
            if any(label in hit.record.content for label in labels):
                found += rank <= 5
                reciprocal += 1.0 / rank
                break
    return Quality(mode, found / len(LABELLED), reciprocal / len(LABELLED))


def evaluate_store(path: Path) -> list[Quality]:
    """Embed the store (if needed) and score every mode."""
    with Store(path, actor="bench") as store:
        engine = SearchEngine(store)
        engine.prepare_semantic()
        return [evaluate(engine, mode) for mode in ("keyword", "semantic", "hybrid")]


def table(results: list[Quality]) -> str:
    lines = [f"{len(LABELLED)} labelled queries", "mode      recall@5    MRR"]
    lines += [f"{r.mode:<9} {r.recall_at_5:8.3f} {r.mrr:6.3f}" for r in results]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a demo store (default: build one in a temporary folder)")
    args = parser.parse_args()
    if args.db:
        path = Path(args.db)
    else:
        from memory_console.ingest.demo import build_demo

        path = Path(tempfile.mkdtemp(prefix="search-quality-")) / "demo.db"
        build_demo(path, count=DEMO_COUNT, seed=DEMO_SEED, now=DEMO_NOW)
    print(table(evaluate_store(path)))


if __name__ == "__main__":
    main()

"""MCP round trips: recall and remember over stdio beside the same calls on MemoryAPI in-process.

    python benchmarks/bench_mcp.py [--count 100000] [--db PATH] [--rounds 10] [--remembers 100]

Builds a demo store with real vectors (every distinct text embedded by the bundled model,
`reindex`'s work) unless --db names one that exists, then times MemoryAPI.recall and
MemoryAPI.remember in this process, and the same calls through `memory-console mcp` over
stdio with the MCP SDK's client (the embedder loaded once, when the server starts). Each
remember stores a new sentence (or reinforces a near-duplicate: counted). Targets: recall
p50 <= 30 ms and remember p50 <= 30 ms over stdio at 100,000 memories.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.bench_import_memory import cpu_model  # noqa: E402
from benchmarks.bench_search import QUERIES  # noqa: E402
from memory_console.api import MemoryAPI  # noqa: E402
from memory_console.store import MemoryFilter, Store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WORDS = (
    "harbour violin lantern orchard glacier pepper saddle comet quarry meadow tundra "
    "falcon biscuit marble canyon ribbon walnut beacon thistle copper lagoon pylon "
    "sparrow cinnamon anchor badger velvet canal prairie cobalt juniper kettle summit "
    "mosaic trellis puffin granite saffron dune willow atlas ember fjord hazel"
).split()


def percentile(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


def line(label: str, samples: list[float]) -> str:
    return (
        f"  {label:<28} p50 {statistics.median(samples):7.2f} ms   "
        f"p95 {percentile(samples, 95):7.2f} ms   ({len(samples)} calls)"
    )


def sentences(count: int, seed: int) -> list[str]:
    """New facts, each unlike the others and the demo's (random word triples)."""
    rng = random.Random(seed)
    return [
        f"The user keeps a {a} {b} beside the {c} in room {rng.randrange(1000)}"
        for a, b, c in (rng.sample(WORDS, 3) for _ in range(count))
    ]


def prepare(db: Path, count: int) -> None:
    """A demo store of `count` memories with every active memory's vector stored."""
    from memory_console.demo import build_demo
    from memory_console.embed.embedder import Embedder
    from memory_console.embed.semantic import SemanticIndex

    if not db.exists():
        started = time.perf_counter()
        build_demo(db, count=count, seed=11, now=time.time())
        print(f"demo store of {count:,} memories built in {time.perf_counter() - started:.1f} s")
    with Store(db, actor="bench") as store:
        semantic = SemanticIndex(store, Embedder.load())
        started = time.perf_counter()
        embedded = semantic.sync()
        seconds = time.perf_counter() - started
        print(f"vectors: {embedded:,} memories (re)embedded in {seconds:.1f} s")


def busiest_owner(db: Path) -> tuple[str, int]:
    with Store(db, read_only=True, create=False) as store:
        rows = store.counts_by("owner", memory_filter=MemoryFilter(status="active"))
    owner, active = max(rows, key=lambda row: row[1])
    return str(owner), int(active)


def in_process(db: Path, owner: str, rounds: int, texts: list[str]) -> None:
    started = time.perf_counter()
    with MemoryAPI(db, owner=owner) as api:
        assert api.semantic_ready, api.semantic_error
        seconds = time.perf_counter() - started
        print(f"in-process MemoryAPI ready (embedder and index) in {seconds:.1f} s")
        api.recall(QUERIES[0], k=5)  # warm
        recalls = []
        for _ in range(rounds):
            for query in QUERIES:
                began = time.perf_counter()
                api.recall(query, k=5)
                recalls.append((time.perf_counter() - began) * 1000)
        remembers, actions = [], Counter()
        for text in texts:
            began = time.perf_counter()
            actions[api.remember(text).action] += 1
            remembers.append((time.perf_counter() - began) * 1000)
    print(line("MemoryAPI.recall (k=5)", recalls))
    print(line("MemoryAPI.remember", remembers) + f"  {dict(actions)}")


async def over_stdio(db: Path, owner: str, rounds: int, texts: list[str]) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.types import Implementation

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_console.cli", "-q", "mcp", "--db", str(db), "--owner", owner],
        env=env,
    )
    started = time.perf_counter()
    info = Implementation(name="bench", version="1")
    async with Client(params, client_info=info, read_timeout_seconds=600) as client:
        warm = await client.call_tool("recall", {"query": QUERIES[0], "k": 5})
        assert warm.structured_content is not None, warm.content
        first = warm.structured_content["memories"][0]["id"]
        print(f"mcp server over stdio ready in {time.perf_counter() - started:.1f} s")
        recalls = []
        for _ in range(rounds):
            for query in QUERIES:
                began = time.perf_counter()
                result = await client.call_tool("recall", {"query": query, "k": 5})
                recalls.append((time.perf_counter() - began) * 1000)
                assert not result.is_error, result.content
        floor = []  # near the protocol's own cost: one row read by id
        for _ in range(rounds * len(QUERIES)):
            began = time.perf_counter()
            await client.call_tool("get_memory", {"id": first})
            floor.append((time.perf_counter() - began) * 1000)
        remembers, actions = [], Counter()
        for text in texts:
            began = time.perf_counter()
            result = await client.call_tool("remember", {"content": text})
            remembers.append((time.perf_counter() - began) * 1000)
            assert result.structured_content is not None, result.content
            actions[result.structured_content["action"]] += 1
    print(line("mcp get_memory, stdio", floor))
    print(line("mcp recall (k=5), stdio", recalls))
    print(line("mcp remember, stdio", remembers) + f"  {dict(actions)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=100_000, help="memories in the demo store")
    parser.add_argument("--db", type=Path, help="a store to use (built there if missing)")
    parser.add_argument("--rounds", type=int, default=10, help="passes over the 10 queries")
    parser.add_argument("--remembers", type=int, default=100, help="remember calls per side")
    args = parser.parse_args()
    db = args.db or Path(tempfile.mkdtemp(prefix="bench-mcp-")) / "memories.db"
    print(f"CPU: {cpu_model()}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    prepare(db, args.count)
    owner, active = busiest_owner(db)
    with Store(db, read_only=True, create=False) as store:
        total = store.count()
    print(f"store: {db} ({total:,} memories); owner {owner} ({active:,} active)")
    # Seeded by the store's size, so a reused store gets sentences it has not seen.
    in_process(db, owner, args.rounds, sentences(args.remembers, seed=total))
    anyio.run(over_stdio, db, owner, args.rounds, sentences(args.remembers, seed=2 * total + 1))


if __name__ == "__main__":
    main()

"""LangGraph's store API over memory-console beside LangGraph's own SqliteStore: put, get and
search latency at 100,000 memories, both on SQLite, with the same items in the same run.

    python -m benchmarks.bench_langgraph [--count 100000] [--db PATH] [--rounds N]
                                         [--baseline-count N]

- memory-console: a demo store of --count memories (seed 7), or a copy of --db (the file and
  those beside it whose names begin with its name; the original is never changed). Every
  active memory is first made the LangGraph item MemoryConsoleStore keeps: namespace
  ("users", "uK", "memories") with K its position modulo 50, key "mem-ID", value {"text": its
  content, "kind": "fact", "n": its position}, owner "uK" (the adapter is opened with
  owner_part=1 and index {"fields": ["text"]}). Its vectors come from the store's own local
  model when the adapter first searches: each distinct text lacking a stored vector is
  embedded once, timed apart from the measurements.
- The baseline: langgraph.store.sqlite.SqliteStore on a new file, its index embedding the
  "text" field with the same local model through a callable, loaded by batch([PutOp, ...])
  with the first --baseline-count of those items (default: all of them); while loading, each
  distinct text is embedded once (timed and printed).
- Then --rounds times on each store, the same operations on both: put of a new item (a uuid
  key, a varied sentence), get of a random loaded item, search of one user's namespace with a
  query (limit 10), and search of it with the filter {"kind": "fact"} and no query (limit 10).

Prints p50 and p95 of each operation, the ratio of the p50s (memory-console / SqliteStore)
and the targets: put p50 <= 5 ms and search with a query p50 <= 25 ms at 100,000 memories.
SqliteStore reads the fields to embed from the index config's "text_fields" (not "fields"), so
the baseline's config names both. Its vector search needs the sqlite-vec extension; without
it the baseline runs without an index, and its search with a query is not measured.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import types
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_import_memory import cpu_model
from benchmarks.bench_search import QUERIES

USERS = 50
GRAPH = "bench"
LOAD_BATCH = 500  # PutOps per batch() while loading the baseline
PEOPLE = ("Hana", "Omar", "Priya", "Dmitri", "Sofia", "Kenji", "Lena", "Tariq", "Ines", "Bruno")
PLACES = ("Rotterdam", "Lisbon", "Osaka", "Nairobi", "Montreal", "Tallinn", "Perth", "Quito")
THINGS = (
    "sourdough baking",
    "the cello",
    "the Helix editor",
    "Postgres 16",
    "trail running",
    "watercolour painting",
    "learning Rust",
    "the billing database",
    "the quarterly review",
    "a Minecraft iron farm",
)
TEMPLATES = (
    "{person} moved to {place} last spring and spends weekends on {thing}.",
    "{person} prefers {thing} over anything else, a colleague in {place} says.",
    "The team in {place} asked {person} to look into {thing} next quarter.",
    "{person}'s favourite way to relax is {thing}, usually on Sunday mornings.",
    "Remind {person} about {thing} in {place} on Thursday at {hour}:00.",
    "{person} stopped {thing} in {place} after {hour} months.",
)
TARGETS = {"put": 5.0, "search, query": 25.0}  # p50 in ms at 100,000 memories


@dataclass(frozen=True)
class Loaded:
    """One item both stores hold before the measurements."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]


@dataclass(frozen=True)
class Round:
    """The operations of one round, the same on both stores."""

    put_namespace: tuple[str, ...]
    put_key: str
    put_value: dict[str, Any]
    get: Loaded
    prefix: tuple[str, ...]
    query: str


def namespace_of(position: int) -> tuple[str, ...]:
    return ("users", f"u{position % USERS}", "memories")


def sentence(number: int) -> str:
    rng = random.Random(number)
    return rng.choice(TEMPLATES).format(
        person=rng.choice(PEOPLE),
        place=rng.choice(PLACES),
        thing=rng.choice(THINGS),
        hour=rng.randint(2, 11),
    )


def p50_p95(samples: Sequence[float]) -> tuple[float, float]:
    return statistics.median(samples), float(np.percentile(np.asarray(samples), 95))


class LocalEmbed:
    """The baseline's embed callable: the memory-console model. While `cache` is a dict (the
    load), each distinct text is embedded once, as the memory-console store embeds them."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.cache: dict[str, list[float]] | None = None

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        if self.cache is None:
            return [vector.tolist() for vector in self.embedder.embed(list(texts))]
        missing = [text for text in dict.fromkeys(texts) if text not in self.cache]
        if missing:
            for text, vector in zip(missing, self.embedder.embed(missing), strict=True):
                self.cache[text] = vector.tolist()
        return [self.cache[text] for text in texts]


# -- the memory-console store ---------------------------------------------------------------


def store_copy(db: Path | None, count: int, folder: Path) -> Path:
    """A copy of `db` in `folder` (`db` built first as a demo store of `count` when it is
    missing), or a demo store of `count` built in `folder` when no `db` is given."""
    from memory_console.demo import build_demo

    target = folder / (db.name if db is not None else f"demo-{count}.db")
    source = db if db is not None else target
    if not source.exists():
        report = build_demo(source, count=count, seed=7)
        print(f"built a {count:,}-memory demo store in {report.seconds:.1f} s")
    if db is not None:
        for file in db.parent.glob(f"{db.name}*"):
            shutil.copy(file, folder / file.name)
    return target


def make_items(path: Path) -> list[Loaded]:
    """Make every active memory a LangGraph item as MemoryConsoleStore keeps one (external_id,
    namespace, metadata.langgraph, its user as owner), one edit per user; returns the items in
    id order."""
    from memory_console.langgraph import Address
    from memory_console.store import MemoryFilter, Store

    items: list[Loaded] = []
    by_user: dict[str, dict[int, dict[str, Any]]] = {}
    with Store(path, actor="bench") as store:
        for position, record in enumerate(store.iter_memories(MemoryFilter(status="active"))):
            namespace = namespace_of(position)
            item = Loaded(
                namespace,
                f"mem-{record.id}",
                {"text": record.content, "kind": "fact", "n": position},
            )
            items.append(item)
            langgraph = {
                "namespace": list(namespace),
                "key": item.key,
                "value": item.value,
                "graph": GRAPH,
            }
            by_user.setdefault(namespace[1], {})[record.id] = {
                "external_id": Address(namespace, item.key).external_id,
                "namespace": ".".join(namespace[:1] + namespace[2:]),  # all but the owner's
                "metadata": json.dumps({**record.metadata, "langgraph": langgraph}),
            }
        for user, extra in by_user.items():
            store.change_fields(list(extra), {"owner": user}, "edited", extra=extra)
    return items


# -- the baseline ---------------------------------------------------------------------------


def sqlite_module() -> tuple[Any, str | None]:
    """The sqlite3 module the baseline connects with, and why its vector search cannot run
    (None when it can): the standard library's when its SQLite loads extensions, else
    pysqlite3's (package pysqlite3-binary, SQLite of its own) when installed."""
    if importlib.util.find_spec("sqlite_vec") is None:
        # langgraph.store.sqlite imports the extension's package first thing; a store without
        # an index never calls it.
        sys.modules["sqlite_vec"] = types.ModuleType("sqlite_vec")
        return sqlite3, "the sqlite-vec package is not installed"
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3, None
    try:
        import pysqlite3.dbapi2 as module  # type: ignore[import-not-found]
    except ImportError:
        return sqlite3, (
            "this Python's sqlite3 cannot load extensions (sqlite-vec); "
            "pysqlite3-binary, which can, is not installed"
        )
    return module, None


def open_baseline(path: Path, embed: LocalEmbed, dim: int) -> tuple[Any, str | None]:
    """SqliteStore on a new file with the local model as its index, and why its vector search
    cannot run here (None when it can; else the store has no index)."""
    module, why = sqlite_module()
    from langgraph.store.sqlite import SqliteStore

    def connect(module: Any) -> Any:
        return module.connect(str(path), check_same_thread=False, isolation_level=None)

    if why is None:
        index: Any = {"dims": dim, "embed": embed, "fields": ["text"], "text_fields": ["text"]}
        conn = connect(module)
        store = SqliteStore(conn, index=index)
        try:
            store.setup()
        except (AttributeError, module.OperationalError) as error:
            why = f"the sqlite-vec extension did not load ({error})"
            conn.close()
            path.unlink()
        else:
            print(f"SqliteStore: SQLite {module.sqlite_version} ({module.__name__}), sqlite-vec")
            return store, None
    store = SqliteStore(connect(sqlite3))
    store.setup()
    print(f"SqliteStore: SQLite {sqlite3.sqlite_version} (sqlite3), no vector index")
    return store, why


def load_baseline(store: Any, items: Sequence[Loaded], embed: LocalEmbed) -> float:
    from langgraph.store.base import PutOp

    started = time.perf_counter()
    embed.cache = {}
    try:
        for start in range(0, len(items), LOAD_BATCH):
            chunk = items[start : start + LOAD_BATCH]
            store.batch([PutOp(item.namespace, item.key, item.value) for item in chunk])
    finally:
        embed.cache = None
    return time.perf_counter() - started


# -- the measurements -----------------------------------------------------------------------


def plan(rounds: int, items: Sequence[Loaded], first_n: int) -> list[Round]:
    rng = random.Random(7)
    planned = []
    for number in range(rounds):
        user = f"u{number % USERS}"
        planned.append(
            Round(
                put_namespace=("users", user, "memories"),
                put_key=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                put_value={"text": sentence(number), "kind": "fact", "n": first_n + number},
                get=items[rng.randrange(len(items))],
                prefix=("users", user),
                query=QUERIES[number % len(QUERIES)],
            )
        )
    return planned


def measure(store: Any, rounds: Sequence[Round], with_query: bool) -> dict[str, list[float]]:
    """Milliseconds of each operation over the rounds, after one unmeasured round."""
    took: dict[str, list[float]] = {"put": [], "get": [], "search, query": [], "search, filter": []}

    def timed(name: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = call(*args, **kwargs)
        took[name].append((time.perf_counter() - started) * 1000)
        return result

    warm = rounds[0]
    store.put(("users", "warm-up", "memories"), "warm-up", {"text": "warm up", "kind": "fact"})
    store.get(warm.get.namespace, warm.get.key)
    if with_query:
        store.search(warm.prefix, query=warm.query, limit=10)
    store.search(warm.prefix, filter={"kind": "fact"}, limit=10)
    for one in rounds:
        timed("put", store.put, one.put_namespace, one.put_key, one.put_value)
        found = timed("get", store.get, one.get.namespace, one.get.key)
        if found is None:
            raise SystemExit(f"get found no item at {one.get.namespace} {one.get.key}")
        if with_query:
            hits = timed("search, query", store.search, one.prefix, query=one.query, limit=10)
            if not hits:
                raise SystemExit(f"search found nothing under {one.prefix} for {one.query!r}")
        timed("search, filter", store.search, one.prefix, filter={"kind": "fact"}, limit=10)
    return took


def table(ours: dict[str, list[float]], theirs: dict[str, list[float]] | None) -> None:
    print(
        f"{'operation':<16} {'memory-console p50/p95':>24} {'SqliteStore p50/p95':>22} "
        f"{'ratio':>7}  target"
    )
    for name, samples in ours.items():
        p50, p95 = p50_p95(samples)
        base = theirs.get(name) if theirs is not None else None
        if base:
            b50, b95 = p50_p95(base)
            baseline, ratio = f"{b50:8.2f} / {b95:8.2f} ms", f"{p50 / b50:6.2f}x"
        else:
            baseline, ratio = f"{'not measured':>22}", f"{'-':>7}"
        target = TARGETS.get(name)
        verdict = f"p50 <= {target:g} ms {'met' if p50 <= target else 'MISSED'}" if target else "-"
        print(f"{name:<16} {p50:10.2f} / {p95:8.2f} ms {baseline} {ratio}  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="memories of the demo store")
    parser.add_argument("--db", type=Path, help="a store to copy (built there if missing)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument(
        "--baseline-count", type=int, help="items loaded into SqliteStore (default: all)"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    print(f"CPU: {cpu_model()}")
    from memory_console.embed.embedder import Embedder
    from memory_console.langgraph import MemoryConsoleStore

    embedder = Embedder.load()
    with tempfile.TemporaryDirectory(prefix="bench-langgraph-") as name:
        folder = Path(name)
        path = store_copy(args.db, args.count, folder)
        started = time.perf_counter()
        items = make_items(path)
        print(
            f"memory-console: {len(items):,} items (the active memories of {path.name}) in "
            f"{USERS} users' namespaces, made in {time.perf_counter() - started:.1f} s; "
            f"SQLite {sqlite3.sqlite_version}"
        )
        loaded = items[: args.baseline_count or len(items)]
        rounds = plan(args.rounds, loaded, len(items))

        with MemoryConsoleStore.open(
            path,
            index={"fields": ["text"]},
            graph=GRAPH,
            owner_part=1,
            embedder=embedder,
        ) as store:
            started = time.perf_counter()
            store.search(("users", "u0"), query=QUERIES[0], limit=10)
            print(
                f"memory-console: first search (vectors loaded, missing ones embedded) "
                f"{time.perf_counter() - started:.1f} s"
            )
            ours = measure(store, rounds, with_query=True)

        embed = LocalEmbed(embedder)
        baseline, why = open_baseline(folder / "langgraph.sqlite", embed, embedder.dim)
        try:
            seconds = load_baseline(baseline, loaded, embed)
            distinct = len({item.value["text"] for item in loaded})
            embedded = f"{distinct:,} distinct texts embedded" if why is None else "no index"
            print(f"SqliteStore: {len(loaded):,} items loaded in {seconds:.1f} s ({embedded})")
            if why is not None:
                print(f"SqliteStore: vector search could not be measured: {why}")
            theirs = measure(baseline, rounds, with_query=why is None)
        finally:
            baseline.conn.close()

    floor = []
    for number in range(args.rounds):
        started = time.perf_counter()
        embedder.embed_query(QUERIES[number % len(QUERIES)])
        floor.append((time.perf_counter() - started) * 1000)
    print(
        f"{args.rounds} rounds; memory-console holds {len(items):,} items, SqliteStore "
        f"{len(loaded):,}; namespaces of {len(items) // USERS:,} and {len(loaded) // USERS:,} "
        "items searched"
    )
    table(ours, theirs)
    print(f"query embedding alone p50 {statistics.median(floor):.2f} ms (in both searches)")


if __name__ == "__main__":
    main()

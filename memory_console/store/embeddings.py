"""The embedding table: each memory's vector with its model id and the hash of its text."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from memory_console.store.connection import Connection
from memory_console.store.errors import StoreError
from memory_console.store.records import MemoryFilter
from memory_console.store.store import Store
from memory_console.store.vector_log import (
    changed_since,
    checked_position,
    log_bounds,
    set_checked_position,
    trim_log,
)

ACTIVE_TEXT = (
    "SELECT m.id, m.title, m.content, m.keywords, e.model_id, e.content_hash "
    "FROM memory m LEFT JOIN embedding e ON e.memory_id = m.id WHERE m.status = 'active'"
)


def memories_to_embed(store: Store) -> Iterator[tuple[int, str, str, str, str | None, str | None]]:
    """Every active memory with its text and its current embedding's model id and hash (or
    None): the caller decides which ones need a (new) vector."""
    with store.lock:
        rows = store.connection.execute(ACTIVE_TEXT).fetchall()
    yield from rows


def active_texts_checked(
    store: Store,
) -> tuple[int, list[tuple[int, str, str, str, str | None, str | None]]]:
    """(log position, memories_to_embed's rows) read in one snapshot: the rows are the store
    as of that position."""
    with store.lock, store.snapshot():
        position = log_bounds(store.connection)[1]
        rows = store.connection.execute(ACTIVE_TEXT).fetchall()
    return position, rows


def texts_to_check(
    store: Store, model_id: str, checked: int, indexed: np.ndarray | None
) -> tuple[int, list[tuple[int, str, str, str, str | None, str | None]]] | None:
    """(log position, memories_to_embed's rows of only the memories that may need a vector):
    active ones missing from `indexed` (the ids a loaded index holds; None: those without a
    stored vector of this model, found by the database) and those logged since the last check
    at `checked`. None when that check is no longer usable (a full one is)."""
    with store.lock, store.snapshot():
        conn = store.connection
        if checked_position(conn, model_id) != checked:
            return None
        position = log_bounds(conn)[1]
        if indexed is None:
            # One anti-join in the database: 0.6 s at 1,000,000 memories on PostgreSQL,
            # where reading every stored id to compare them here took 2.5 s.
            missing = np.fromiter(
                (
                    row[0]
                    for row in conn.execute(
                        "SELECT m.id FROM memory m WHERE m.status = 'active' AND NOT EXISTS "
                        "(SELECT 1 FROM embedding e WHERE e.memory_id = m.id AND e.model_id = ?)",
                        (model_id,),
                    )
                ),
                np.int64,
            )
        else:
            active = np.fromiter(
                (row[0] for row in conn.execute("SELECT id FROM memory WHERE status = 'active'")),
                np.int64,
            )
            missing = np.setdiff1d(active, indexed, assume_unique=True)
        wanted = sorted({*missing.tolist(), *changed_since(conn, checked)})
        rows = []
        for start in range(0, len(wanted), 900):
            chunk = wanted[start : start + 900]
            marks = ",".join("?" * len(chunk))
            rows += conn.execute(f"{ACTIVE_TEXT} AND m.id IN ({marks})", chunk).fetchall()
    return position, rows


def last_check(store: Store, model_id: str) -> int | None:
    return store.read(checked_position, model_id)


def record_check(store: Store, model_id: str, position: int, written: int) -> None:
    """Every active memory's vector of this model was current at `position`, and the caller
    has written `written` vectors since: later syncs check only what the log names after it.
    When the log holds nothing but those writes after `position`, the check holds after them
    too (each written vector logs one entry), so they are not checked again. On PostgreSQL
    the log only names texts that changed and no index file needs it: what lies before the
    check is deleted with it."""
    with store.transaction("recording the vector check") as conn:
        high = log_bounds(conn)[1]
        since = conn.execute("SELECT count(*) FROM vector_log WHERE seq > ?", (position,))
        if since.fetchone()[0] == written:
            position = high
        set_checked_position(conn, model_id, position)
        if store.dialect.vectors_in_database:
            trim_log(conn, position)


def texts_of(store: Store, ids: Sequence[int]) -> list[tuple[int, str, str, str, str, str]]:
    """(id, title, content, keywords JSON, owner, topic) of the given memories that are active."""
    found: list[tuple[int, str, str, str, str, str]] = []
    for start in range(0, len(ids), 900):
        chunk = list(ids[start : start + 900])
        marks = ",".join("?" * len(chunk))
        found += store._query(
            f"SELECT id, title, content, keywords, owner, topic FROM memory "
            f"WHERE status = 'active' AND id IN ({marks})",
            chunk,
        )
    return found


def scopes_of(store: Store, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """{id: (owner, topic)} of the given memories."""
    found: dict[int, tuple[str, str]] = {}
    for start in range(0, len(ids), 900):
        chunk = [int(ident) for ident in ids[start : start + 900]]
        marks = ",".join("?" * len(chunk))
        for ident, owner, topic in store._query(
            f"SELECT id, owner, topic FROM memory WHERE id IN ({marks})", chunk
        ):
            found[ident] = (owner, topic)
    return found


def vectors_for_hashes(store: Store, model_id: str, hashes: Iterable[str]) -> dict[str, bytes]:
    """Stored vectors of the same model by content hash: a repeated text is embedded once."""
    wanted = list(dict.fromkeys(hashes))
    found: dict[str, bytes] = {}
    for start in range(0, len(wanted), 900):
        chunk = wanted[start : start + 900]
        marks = ",".join("?" * len(chunk))
        for content_hash, vector in store._query(
            store.dialect.vectors_by_hash(marks), [model_id, *chunk]
        ):
            found[content_hash] = vector
    return found


def write_vectors(store: Store, model_id: str, rows: Sequence[tuple[int, str, bytes]]) -> None:
    """Upsert (memory id, content hash, float32 bytes) rows in one transaction (on
    PostgreSQL, into pgvector's column too)."""
    dialect = store.dialect
    with store.transaction("storing embeddings") as conn:
        conn.executemany(
            dialect.embedding_upsert,
            [
                (ident, model_id, content_hash, vector, *dialect.vector_params(vector))
                for ident, content_hash, vector in rows
            ],
        )


def drop_other_models(store: Store, model_id: str) -> dict[str, int]:
    """Delete vectors of any other model: a model change re-embeds, never mixes. Returns how
    many vectors of each other model were deleted."""
    # Two ranges, not `!=`: the model_id index answers them without reading every row (a
    # million-row store spent a second here at every console start), and a store holding one
    # model's vectors takes no write lock at all.
    other = "model_id < ? OR model_id > ?"
    if not store._query(f"SELECT 1 FROM embedding WHERE {other} LIMIT 1", (model_id, model_id)):
        return {}
    with store.transaction("dropping embeddings of another model") as conn:
        counts = conn.execute(
            f"SELECT model_id, count(*) FROM embedding WHERE {other} GROUP BY model_id",
            (model_id, model_id),
        ).fetchall()
        conn.execute(f"DELETE FROM embedding WHERE {other}", (model_id, model_id))
    return {str(model): int(count) for model, count in counts}


def load_active_vectors(
    store: Store, model_id: str, dim: int, batch: int = 50_000
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str]]]:
    """(ids, [n, dim] float32 matrix, (owner, topic) of each) of every active memory's vector
    of this model."""
    with store.lock:
        count = store.connection.execute(
            "SELECT count(*) FROM embedding e JOIN memory m ON m.id = e.memory_id "
            "WHERE m.status = 'active' AND e.model_id = ?",
            (model_id,),
        ).fetchone()[0]
        ids = np.empty(count, dtype=np.int64)
        matrix = np.empty((count, dim), dtype=np.float32)
        scopes: list[tuple[str, str]] = []
        cursor = store.connection.execute(
            "SELECT e.memory_id, e.vector, m.owner, m.topic FROM embedding e "
            "JOIN memory m ON m.id = e.memory_id WHERE m.status = 'active' AND e.model_id = ?",
            (model_id,),
        )
        position = 0
        while position < count:
            rows = cursor.fetchmany(batch)
            if not rows:
                break
            end = position + len(rows)
            ids[position:end] = [row[0] for row in rows]
            matrix[position:end] = np.frombuffer(
                b"".join(row[1] for row in rows), np.float32
            ).reshape(len(rows), dim)
            scopes += [(row[2], row[3]) for row in rows]
            position = end
    return ids[:position], matrix[:position], scopes


def other_models(store: Store, model_id: str) -> list[str]:
    """The models other than `model_id` that stored vectors come from."""
    rows = store._query(
        "SELECT DISTINCT model_id FROM embedding WHERE model_id < ? OR model_id > ?",
        (model_id, model_id),
    )
    return [row[0] for row in rows]


def embedding_count(store: Store, model_id: str) -> int:
    return int(store._query("SELECT count(*) FROM embedding WHERE model_id = ?", (model_id,))[0][0])


def hashes_of(store: Store, model_id: str, ids: Sequence[int]) -> dict[int, str]:
    """memory id -> content hash of its stored vector of this model."""
    found: dict[int, str] = {}
    for start in range(0, len(ids), 900):
        chunk = list(ids[start : start + 900])
        marks = ",".join("?" * len(chunk))
        found.update(
            store._query(
                f"SELECT memory_id, content_hash FROM embedding WHERE model_id = ? "
                f"AND memory_id IN ({marks})",
                [model_id, *chunk],
            )
        )
    return found


# -- vectors searched inside the database (PostgreSQL with pgvector) --------------------------

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
# ef_construction at 400, store/postgres.py; benchmarks/bench_pg_scale.py), recall@10 over
# 200 fragments of stored texts was 0.84 at 100, 0.96 at 400 and 0.98 at 1,000, for 1.3,
# 3.2 and 7.8 ms a search of the index alone; hybrid search's p50 stays near 30 ms.
EF_SEARCH = 1000


def stored_count(store: Store, model_id: str, active_only: bool = True) -> int:
    """How many (active) memories have a vector of this model in the database."""
    sql = "SELECT count(*) FROM embedding e"
    if active_only:
        sql += " JOIN memory m ON m.id = e.memory_id WHERE m.status = 'active' AND"
    else:
        sql += " WHERE"
    return int(store._query(f"{sql} e.model_id = ?", (model_id,))[0][0])


# A sync that writes at least this many vectors, more than the HNSW table holds, drops the
# index first and builds it after its rows (PostgreSQL): inserting a vector into the index
# costs 5.0 ms at 51,015 texts, building the index over all of them 0.5 ms a vector.
REBUILD_VECTORS = 5000


@contextmanager
def vector_index_built_after(store: Store, writing: int) -> Iterator[None]:
    """Around a sync writing `writing` vectors on PostgreSQL: when they are many, more than
    the HNSW table holds (a first reindex of an imported store), the index is dropped in a
    transaction of its own and built again once they are written (CREATE INDEX CONCURRENTLY:
    agents keep writing meanwhile; searches scan exactly until it is there). Whatever the
    size, an index found missing or invalid (a sync stopped in between) is built again."""
    from memory_console.store.postgres import VECTOR_INDEX, VECTOR_TABLE

    if not store.dialect.vectors_in_database or store.read_only:
        yield
        return
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
    from memory_console.store.postgres import VECTOR_INDEX, VECTOR_INDEXES

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
    from memory_console.store.dialect import vector_literal

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
    from memory_console.store.dialect import vector_literal

    if not ids:
        return {}
    literal = vector_literal(np.asarray(vector, np.float32).reshape(-1).tobytes())
    found: dict[int, float] = {}
    for start in range(0, len(ids), 900):
        chunk = [int(ident) for ident in ids[start : start + 900]]
        marks = ",".join("?" * len(chunk))
        for ident, cosine in store._query(
            f"SELECT memory_id, 1 - (embedding <=> ?::vector) FROM embedding "
            f"WHERE model_id = ? AND embedding IS NOT NULL AND memory_id IN ({marks})",
            [literal, model_id, *chunk],
        ):
            found[int(ident)] = float(cosine)
    return found


def stored_ids(store: Store, model_id: str) -> np.ndarray:
    """The ids of active memories with a vector of this model, ascending."""
    rows = store._query(
        "SELECT e.memory_id FROM embedding e JOIN memory m ON m.id = e.memory_id "
        "WHERE m.status = 'active' AND e.model_id = ? ORDER BY e.memory_id",
        (model_id,),
    )
    return np.asarray([row[0] for row in rows], np.int64)


def stored_vectors(store: Store, model_id: str, ids: Sequence[int], dim: int) -> np.ndarray:
    """The stored float32 vectors of the given ids, in order; KeyError for one without."""
    found: dict[int, bytes] = {}
    for start in range(0, len(ids), 900):
        chunk = [int(ident) for ident in ids[start : start + 900]]
        marks = ",".join("?" * len(chunk))
        found.update(
            store._query(
                f"SELECT memory_id, vector FROM embedding WHERE model_id = ? "
                f"AND memory_id IN ({marks})",
                [model_id, *chunk],
            )
        )
    matrix = np.empty((len(ids), dim), np.float32)
    for row, ident in enumerate(ids):
        if int(ident) not in found:
            raise KeyError(int(ident))
        matrix[row] = np.frombuffer(found[int(ident)], np.float32)
    return matrix

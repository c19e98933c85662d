"""The embedding table: each memory's vector with its model id and the hash of its text."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from memory_console.store.postgres import vectors
from memory_console.store.records import chunks
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
        for chunk, marks in chunks(wanted):
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
    for chunk, marks in chunks(ids):
        found += store._query(
            f"SELECT id, title, content, keywords, owner, topic FROM memory "
            f"WHERE status = 'active' AND id IN ({marks})",
            chunk,
        )
    return found


def scopes_of(store: Store, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """{id: (owner, topic)} of the given memories."""
    found: dict[int, tuple[str, str]] = {}
    for chunk, marks in chunks([int(ident) for ident in ids]):
        for ident, owner, topic in store._query(
            f"SELECT id, owner, topic FROM memory WHERE id IN ({marks})", chunk
        ):
            found[ident] = (owner, topic)
    return found


def vectors_for_hashes(store: Store, model_id: str, hashes: Iterable[str]) -> dict[str, bytes]:
    """Stored vectors of the same model by content hash: a repeated text is embedded once."""
    wanted = list(dict.fromkeys(hashes))
    found: dict[str, bytes] = {}
    for chunk, marks in chunks(wanted):
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
    for chunk, marks in chunks(ids):
        found.update(
            store._query(
                f"SELECT memory_id, content_hash FROM embedding WHERE model_id = ? "
                f"AND memory_id IN ({marks})",
                [model_id, *chunk],
            )
        )
    return found


# -- the vectors a store keeps in the database (PostgreSQL with pgvector; the search is
# store/postgres/vectors.py) -------------------------------------------------------------------


def stored_count(store: Store, model_id: str, active_only: bool = True) -> int:
    """How many (active) memories have a vector of this model in the database."""
    sql = "SELECT count(*) FROM embedding e"
    if active_only:
        sql += " JOIN memory m ON m.id = e.memory_id WHERE m.status = 'active' AND"
    else:
        sql += " WHERE"
    return int(store._query(f"{sql} e.model_id = ?", (model_id,))[0][0])


@contextmanager
def vector_index_built_after(store: Store, writing: int) -> Iterator[None]:
    """Around a sync writing `writing` vectors: a writable store that keeps its vectors in the
    database (PostgreSQL) builds its HNSW index after them when they are many, and again when
    it is found missing or invalid (store/postgres/vectors.py); any other store does nothing."""
    if not store.dialect.vectors_in_database or store.read_only:
        yield
        return
    with vectors.index_built_after(store, writing):
        yield


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
    for chunk, marks in chunks([int(ident) for ident in ids]):
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

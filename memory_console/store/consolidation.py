"""What consolidation reads: the candidates' texts and fields, their stored vectors, and the
vectors of one merge group under review."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from memory_console.store import dialect
from memory_console.store.bulk import SCOPES
from memory_console.store.connection import Connection
from memory_console.store.records import MEMORY_SELECT, MemoryRecord, chunks

if TYPE_CHECKING:
    from memory_console.store.store import Store


def candidate_rows(conn: Connection, scope: str) -> list[MemoryRecord]:
    """Every memory of `scope`, in id order."""
    return [
        MemoryRecord.from_row(row)
        for row in conn.execute(
            f"SELECT {MEMORY_SELECT} FROM memory WHERE {SCOPES[scope]} ORDER BY id"
        )
    ]


def candidate_scopes(conn: Connection, scope: str) -> list[tuple[str, str]]:
    """The (owner, topic) pairs of `scope`'s memories, smallest first (then in order of their
    first memory): planned in this order, a review open meanwhile gets groups soonest."""
    # A full scan: walking the status index visits each row's page anyway, for the other
    # columns of the scope (measured at 100,000 memories: 0.08 s against 0.2 s).
    return [
        (owner, topic)
        for owner, topic, _, _ in conn.execute(
            f"SELECT owner, topic, COUNT(*), MIN(id) FROM memory {dialect.of(conn).not_indexed} "
            f"WHERE {SCOPES[scope]} GROUP BY owner, topic ORDER BY COUNT(*), MIN(id)"
        )
    ]


def scope_candidates(conn: Connection, scope: str, owner: str, topic: str) -> list[MemoryRecord]:
    """The memories of `scope` with this owner and topic, in id order."""
    return [
        MemoryRecord.from_row(row)
        for row in conn.execute(
            f"SELECT {MEMORY_SELECT} FROM memory WHERE {SCOPES[scope]} "
            "AND owner = ? AND topic = ? ORDER BY id",
            (owner, topic),
        )
    ]


def stored_models(conn: Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT DISTINCT model_id FROM embedding")]


def vectors_of(
    conn: Connection, model_id: str, ids: Sequence[int]
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(ids that have a vector of this model, their content hashes, [n, dim] float32)."""
    found_ids: list[int] = []
    hashes: list[str] = []
    blobs: list[bytes] = []
    for chunk, marks in chunks(ids):
        for ident, content_hash, vector in conn.execute(
            f"SELECT memory_id, content_hash, vector FROM embedding WHERE model_id = ? "
            f"AND memory_id IN ({marks}) ORDER BY memory_id",
            [model_id, *chunk],
        ):
            found_ids.append(ident)
            hashes.append(content_hash)
            blobs.append(vector)
    if not blobs:
        return np.empty(0, np.int64), [], np.empty((0, 0), np.float32)
    dim = len(blobs[0]) // 4
    matrix = np.frombuffer(b"".join(blobs), np.float32).reshape(len(blobs), dim)
    return np.asarray(found_ids, np.int64), hashes, matrix


def group_vectors(store: Store, ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """(ids with a vector, their vectors) when the store holds one embedding model."""
    with store.lock:
        models = stored_models(store.connection)
        if len(models) != 1:
            return None
        found, _, matrix = vectors_of(store.connection, models[0], list(ids))
    return (found, matrix) if len(found) else None


def copy_vector(conn: Connection, new_id: int, member_ids: Sequence[int]) -> bool:
    """Give a merged memory the stored vector of a member with the same title, content and
    keywords (the text embedded, so the same content hash): the next plan compares it at
    once instead of counting it among the memories without a vector. True when one was."""
    for member in member_ids:
        cursor = conn.execute(dialect.of(conn).copy_vector, (new_id, member))
        if cursor.rowcount:
            return True
    return False

"""VectorIndex's interface over the vectors a PostgreSQL store keeps itself (pgvector)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from memory_console.store import MemoryFilter, Store
from memory_console.store import embeddings as table
from memory_console.store.postgres import vectors


class DatabaseIndex:
    """The store's own vectors, searched inside the database: nothing is loaded into this
    process, and adding or removing rows is the store's job (embeddings are written by
    SemanticIndex.embed_and_store, archived memories drop out by the status filter), so add,
    remove and set_labels have nothing to do."""

    def __init__(self, store: Store, model_id: str, dim: int) -> None:
        self.store = store
        self.model_id = model_id
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def scan_kernel(self) -> str:
        return "pgvector in the database: an exact scan of a filter's few rows, else HNSW"

    def __len__(self) -> int:
        return table.stored_count(self.store, self.model_id)

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, int | np.integer) or isinstance(item, bool):
            return False
        return bool(table.hashes_of(self.store, self.model_id, [int(item)]))

    def ids(self) -> np.ndarray:
        return table.stored_ids(self.store, self.model_id)

    def get(self, ids: Iterable[int] | np.ndarray) -> np.ndarray:
        matrix = table.stored_vectors(self.store, self.model_id, list(ids), self._dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms > 0.0, norms, 1.0)

    def add(
        self,
        ids: Iterable[int] | np.ndarray,
        vectors: np.ndarray,
        labels: np.ndarray | None = None,
    ) -> None:
        """The vectors are in the database already."""

    def remove(self, ids: Iterable[int] | np.ndarray) -> int:
        """A memory leaves search by its status, in the query's filter."""
        return 0

    def set_labels(self, ids: Iterable[int] | np.ndarray, labels: np.ndarray) -> None:
        """Owner and topic are read from the memory row by the query itself."""

    def nearest(
        self, vector: np.ndarray, memory_filter: MemoryFilter, k: int
    ) -> list[tuple[int, float]]:
        return vectors.nearest_in_database(self.store, self.model_id, vector, memory_filter, k)

    def cosines(self, vector: np.ndarray, ids: list[int]) -> dict[int, float]:
        return vectors.cosines_in_database(self.store, self.model_id, vector, ids)

    def search(
        self,
        query: np.ndarray,
        k: int,
        allowed_ids: Iterable[int] | np.ndarray | None = None,
        labels: Iterable[tuple[int, int]] = (),
    ) -> tuple[np.ndarray, np.ndarray]:
        """VectorIndex.search over the active memories (or the allowed ids); labels are
        not kept here: SemanticIndex passes a PostgreSQL store's filters as a MemoryFilter."""
        if tuple(labels):
            raise ValueError("a database index takes a MemoryFilter, not labels")
        ids = None if allowed_ids is None else tuple(int(i) for i in allowed_ids)
        found = self.nearest(query, MemoryFilter(status="active", ids=ids), k)
        return (
            np.asarray([ident for ident, _ in found], np.int64),
            np.asarray([cosine for _, cosine in found], np.float64),  # as the database has them
        )

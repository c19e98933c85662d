"""The semantic side of search: stored embeddings and a vector index kept in step."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memory_console.embed.database_index import DatabaseIndex
from memory_console.embed.embedder import content_hash, embedding_text
from memory_console.embed.index import INT8_SCAN_FROM, VectorIndex
from memory_console.store import MemoryFilter, Store
from memory_console.store import embeddings as table

if TYPE_CHECKING:
    from memory_console.embed.embedder import Embedder
    from memory_console.embed.mapped_index import MappedIndex
    from memory_console.store.vector_file import Opened

Progress = Callable[[int, int], None]
Cancelled = Callable[[], bool]
BATCH = 256  # distinct texts embedded per step: progress and cancellation granularity
WRITE_ROWS = 4096  # vectors written per transaction (what a kill may lose is embedded again)
REWRITE_AFTER = 2000  # sync writes the index file anew after embedding this many memories
REMOVING = ("archived", "consolidated", "purged", "superseded")
# Kept beside each vector in the index, so that these filters need no id set from SQLite.
SCOPE = ("owner", "topic")
_UNKNOWN = -2  # the code of a filter value no indexed memory has: it matches no row
TIER_OVERFETCH = 4  # a tier filter ranks this many times k from the labels, then keeps its tiers


class Cancelled_(Exception):
    """The embedding run was cancelled between two batches (what was written stays)."""


class Written:
    """Vectors on their way to the store: rows gathered, written WRITE_ROWS at a time in one
    transaction each (none in a read-only store), with progress counted as they are written."""

    def __init__(
        self,
        store: Store,
        model_id: str,
        progress: Progress | None,
        total: int,
        keep: bool = True,
    ) -> None:
        """keep: whether result() returns the vectors written (a caller that reloads the
        index from the store after a large sync needs only the ids: 150 MB fewer at 100,000
        memories)."""
        self.store, self.model_id, self.progress, self.total = store, model_id, progress, total
        self.keep = keep
        self.rows: list[tuple[int, str, bytes]] = []
        self.ids: list[int] = []
        self.vectors: list[bytes] = []

    @property
    def pending(self) -> int:
        return len(self.rows)

    def add(self, ident: int, digest: str, vector: bytes) -> None:
        self.rows.append((ident, digest, vector))

    def flush(self) -> None:
        if not self.rows:
            return
        if not self.store.read_only:
            self.rows.sort()  # in id order: appended to the table's B-tree, not spread over it
            table.write_vectors(self.store, self.model_id, self.rows)
        self.ids += [ident for ident, _, _ in self.rows]
        if self.keep:
            self.vectors += [vector for _, _, vector in self.rows]
        self.rows = []

    def report(self) -> None:
        """Progress: memories whose vector is found or made (written or about to be)."""
        if self.progress is not None:
            self.progress(len(self.ids) + len(self.rows), self.total)

    def result(self, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, [n, dim] float32 matrix) of every row written (no rows unless kept)."""
        matrix = np.frombuffer(b"".join(self.vectors), np.float32).reshape(-1, dim)
        return np.asarray(self.ids, np.int64), matrix


def memory_text(title: str, content: str, keywords_json: str) -> str:
    return embedding_text(title, content, json.loads(keywords_json or "[]"))


class SemanticIndex:
    """Vectors of every active memory under one model, searchable by cosine similarity.

    sync() embeds what lacks a current vector (each distinct text once) and loads the index;
    as a Store listener it then follows adds, edits, archives and restores without a rebuild.
    A PostgreSQL store keeps and searches its vectors itself (pgvector): the index is then a
    DatabaseIndex, and search runs in the database with the filter in the same query.
    """

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self.index: VectorIndex | MappedIndex | DatabaseIndex = self._new_index(0)
        self.ready = False
        # Where load() found the vectors: "file", "store" (SQLite) or "database" (pgvector).
        self.source = "store"
        self.file_problem: str | None = None  # why the index file was not used
        self.loaded = 0  # how many vectors load() found
        self.replaced: dict[str, int] = {}  # other models' vectors sync() dropped, by model
        self._lock = threading.Lock()
        self._scope_codes: dict[str, dict[str, int]] = {name: {} for name in SCOPE}

    def _new_index(self, capacity: int) -> VectorIndex:
        # The 8-bit code scan only where it measured faster on this machine (calibration.py).
        calibration = getattr(self.embedder, "calibration", None)
        scan_from = INT8_SCAN_FROM if calibration is None else calibration.int8_scan_from
        return VectorIndex(
            self.embedder.dim, capacity=capacity, int8_scan_from=scan_from, labels=len(SCOPE)
        )

    def _labels(self, scopes: Sequence[tuple[str, ...]]) -> np.ndarray:
        """The index labels of (owner, topic) pairs, coding each new value on first sight."""
        labels = np.empty((len(scopes), len(SCOPE)), dtype=np.int32)
        with self._lock:
            for column, name in enumerate(SCOPE):
                codes = self._scope_codes[name]
                labels[:, column] = [
                    codes.setdefault(scope[column], len(codes)) for scope in scopes
                ]
        return labels

    def fill(
        self,
        ids: np.ndarray,
        vectors: np.ndarray,
        scopes: Sequence[tuple[str, str]] | None = None,
        extra_capacity: int = 0,
    ) -> None:
        """Replace the index with these vectors ((owner, topic) of each read when not given)."""
        index = self._new_index(len(ids) + extra_capacity)
        index.add(ids, vectors, self._labels(self._scopes(ids) if scopes is None else scopes))
        self.index = index
        self.ready = True

    def _scopes(self, ids: np.ndarray) -> list[tuple[str, str]]:
        known = table.scopes_of(self.store, ids.tolist())
        return [known.get(int(ident), ("", "")) for ident in ids]

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    def pending(self) -> list[tuple[int, str]]:
        """(id, text) of active memories with no vector of this model for their current text."""
        return self._stale(table.active_texts_checked(self.store)[1])

    def _stale(
        self, rows: Sequence[tuple[int, str, str, str, str | None, str | None]]
    ) -> list[tuple[int, str]]:
        out = []
        for ident, title, content, keywords, model_id, stored_hash in rows:
            text = memory_text(title, content, keywords)
            if model_id != self.model_id or stored_hash != content_hash(text):
                out.append((ident, text))
        return out

    @property
    def in_database(self) -> bool:
        """Whether the store keeps and searches the vectors itself (PostgreSQL)."""
        return self.store.dialect.vectors_in_database

    def _pending_and_position(self) -> tuple[list[tuple[int, str]], int]:
        """pending() and the log position it holds at. With a loaded index and a recorded
        check, only the active memories the index lacks and those the log names since the
        check are read and hashed (a million texts take a minute; these, milliseconds). On
        PostgreSQL the log names the memories whose text changed (memory's trigger,
        store/postgres/schema.py) and the index's ids are those with a stored vector."""
        checked = table.last_check(self.store, self.model_id) if self.ready else None
        if checked is not None:
            indexed = None if self.in_database else self.index.ids()
            found = table.texts_to_check(self.store, self.model_id, checked, indexed)
            if found is not None:
                return self._stale(found[1]), found[0]
        position, rows = table.active_texts_checked(self.store)
        return self._stale(rows), position

    def embed_and_store(
        self,
        items: Sequence[tuple[int, str]],
        progress: Progress | None = None,
        cancelled: Cancelled | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """See _embed_and_store."""
        new_ids, vectors, _ = self._embed_and_store(items, progress, cancelled)
        return new_ids, vectors

    def _embed_and_store(
        self,
        items: Sequence[tuple[int, str]],
        progress: Progress | None = None,
        cancelled: Cancelled | None = None,
        queries: Sequence[str] = (),
        keep: bool = True,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Vectors for (id, text) items: reused by content hash where stored, else embedded;
        written in batches. Returns (ids, matrix) of everything written.

        Each distinct new text is embedded once, in order of length, BATCH at a time: texts
        of one length share a batch as in one `Embedder.embed` call over them all (per-item
        batches padded short texts to long ones and embedded a text once per batch holding
        it). Vectors are written WRITE_ROWS at a time: a commit per batch cost a tenth of
        the embedding time.

        `queries` are embedded in the same batches as the new texts (a search's query beside
        what was written since the last one: one model run instead of two); their vectors
        come third, in order, stored nowhere."""
        written = Written(self.store, self.model_id, progress, len(items), keep)
        fresh: dict[str, str] = {}  # content hash -> text, of texts no stored vector has
        waiting: dict[str, list[int]] = {}  # content hash -> the ids that need its vector
        for start in range(0, len(items), WRITE_ROWS):
            if cancelled is not None and cancelled():
                raise Cancelled_()
            chunk = items[start : start + WRITE_ROWS]
            hashes = [content_hash(text) for _, text in chunk]
            known = table.vectors_for_hashes(self.store, self.model_id, hashes)
            for (ident, text), digest in zip(chunk, hashes, strict=True):
                vector = known.get(digest)
                if vector is not None:
                    written.add(ident, digest, vector)
                else:
                    fresh.setdefault(digest, text)
                    waiting.setdefault(digest, []).append(ident)
            written.flush()
            written.report()
        asked = {f"\0query {number}": query for number, query in enumerate(queries)}
        fresh.update(asked)  # no content hash begins with NUL
        by_length = sorted(fresh, key=lambda digest: len(fresh[digest]))
        query_vectors = np.empty((len(asked), self.embedder.dim), dtype=np.float32)
        for start in range(0, len(by_length), BATCH):
            if cancelled is not None and cancelled():
                written.flush()
                raise Cancelled_()
            digests = by_length[start : start + BATCH]
            vectors = self.embedder.embed([fresh[digest] for digest in digests])
            for digest, vector in zip(digests, vectors, strict=True):
                if digest in asked:
                    query_vectors[int(digest.rsplit(" ", 1)[1])] = vector
                    continue
                data = vector.astype(np.float32).tobytes()
                for ident in waiting.pop(digest):
                    written.add(ident, digest, data)
            if written.pending >= WRITE_ROWS:
                written.flush()
            written.report()
        written.flush()
        return (*written.result(self.embedder.dim), query_vectors)

    def sync(self, progress: Progress | None = None, cancelled: Cancelled | None = None) -> int:
        """Drop other models' vectors, load the index, embed what is missing or stale.
        Returns how many memories were (re)embedded."""
        if not self.store.read_only:
            self.replaced = table.drop_other_models(self.store, self.model_id)
        self.load()
        items, position = self._pending_and_position()
        if progress is not None:
            progress(0, len(items))
        # Many new vectors: the index file is written anew (now rather than by the next
        # process to open the store, a search) and read from it, not from memory.
        rewrite = len(items) >= REWRITE_AFTER and not self.store.read_only and not self.in_database
        count = len(items)
        with table.vector_index_built_after(self.store, count):
            new_ids, new_vectors, _ = self._embed_and_store(
                items, progress, cancelled, keep=not rewrite
            )
        del items  # their texts (60 MB at 100,000 memories), before the file is written
        if not self.store.read_only:
            # What was pending at `position` is written now; later changes are in the log.
            table.record_check(self.store, self.model_id, position, len(new_ids))
        if rewrite:
            self.load()
        elif len(new_ids):
            self.index.add(new_ids, new_vectors, self._labels(self._scopes(new_ids)))
        return count

    def load(self) -> int:
        """Load the stored vectors into the index without embedding anything; returns how
        many active memories still lack a current vector (search covers the others).

        The vectors come from the index file beside the store when it is valid (written here
        when it is not and the store is writable), else from SQLite row by row. A PostgreSQL
        store's stay in the database, searched there."""
        from memory_console.store import vector_file

        if self.in_database:
            self.index = DatabaseIndex(self.store, self.model_id, self.embedder.dim)
            self.source, self.file_problem, self.ready = "database", None, True
            # Counted once: on PostgreSQL the count joins the embedding table to memory (a
            # second at 1,000,000 memories), where an index in the process knows its size.
            self.loaded = len(self.index)
            return max(0, self.store.count(MemoryFilter(status="active")) - self.loaded)

        opened, why = vector_file.open_index(self.store, self.model_id, self.embedder.dim)
        if opened is None:
            self.source, self.file_problem = "store", why
            ids, matrix, scopes = table.load_active_vectors(
                self.store, self.model_id, self.embedder.dim
            )
            self.fill(ids, matrix, scopes)
            count = len(ids)
        else:
            self.source = "file (written now)" if opened.built else "file"
            self.file_problem = None
            self._use_file(opened)
            count = len(self.index)
        self.loaded = count
        return max(0, self.store.count(MemoryFilter(status="active")) - count)

    def _use_file(self, opened: Opened) -> None:
        """Search the mapped file, with the rows changed since it was written in an overlay."""
        from memory_console.embed.mapped_index import MappedIndex

        with self._lock:
            self._scope_codes = {
                name: {value: code for code, value in enumerate(opened.file.codes[name])}
                for name in SCOPE
            }
        index = MappedIndex(opened.file, labels=len(SCOPE), overlay_capacity=len(opened.ids))
        index.remove(opened.changed)
        if len(opened.ids):
            index.add(opened.ids, opened.vectors, self._labels(opened.scopes))
        self.index = index
        self.ready = True

    def on_change(self, kind: str, ids: list[int]) -> None:
        """Store listener: keep vectors and index in step with one change."""
        self.catch_up([(kind, ids)])

    def catch_up(
        self, changes: Sequence[tuple[str, list[int]]], query: str | None = None
    ) -> np.ndarray | None:
        """Keep vectors and index in step with these changes, as on_change does one by one,
        their new texts embedded together; with a query, it is embedded in the same batches
        and its vector returned (None when the index is not ready)."""
        if not self.ready:
            return None
        items: list[tuple[int, str]] = []
        scope_of: dict[int, tuple[str, str]] = {}
        for kind, ids in changes:
            items += self._changed_items(kind, ids, scope_of)
        unique = list(dict(items).items())  # a memory added, then edited: its text once
        new_ids, vectors, asked = self._embed_and_store(unique, queries=[query] if query else [])
        if len(new_ids):
            self.index.add(
                new_ids, vectors, self._labels([scope_of[int(ident)] for ident in new_ids])
            )
        return asked[0] if query else None

    def _changed_items(
        self, kind: str, ids: list[int], scope_of: dict[int, tuple[str, str]]
    ) -> list[tuple[int, str]]:
        """The (id, text) items one change leaves to embed (the index's removals and labels
        done); scope_of gains each changed memory's (owner, topic)."""
        if kind in REMOVING:
            self.index.remove(ids)
            return []
        if kind not in ("added", "edited", "restored"):
            return []
        rows = table.texts_of(self.store, ids)
        active = {row[0] for row in rows}
        gone = [ident for ident in ids if ident not in active]
        if gone:
            self.index.remove(gone)
        items = [
            (ident, memory_text(title, content, keywords))
            for ident, title, content, keywords, _, _ in rows
        ]
        if kind == "edited" and rows:
            # An edit may move a memory to another owner or topic without changing its text.
            self.index.set_labels(
                [row[0] for row in rows], self._labels([(row[4], row[5]) for row in rows])
            )
            stored = table.hashes_of(self.store, self.model_id, sorted(active))
            items = [
                (ident, text)
                for ident, text in items
                if stored.get(ident) != content_hash(text) or ident not in self.index
            ]
        scope_of.update((row[0], (row[4], row[5])) for row in rows)
        return items

    def cosines(self, vector: np.ndarray, ids: Sequence[int]) -> dict[int, float]:
        """The cosine of each indexed id to a (query) vector; ids without a vector are left out."""
        if self.in_database:
            assert isinstance(self.index, DatabaseIndex)
            return self.index.cosines(vector, list(ids))
        index = self.index
        assert not isinstance(index, DatabaseIndex)
        wanted = list(ids)
        present = [i for i, known in zip(wanted, index.known(wanted), strict=True) if known]
        if not present:
            return {}
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query))
        try:
            scores = self.index.get(present) @ (query / norm if norm > 0.0 else query)
        except KeyError:  # removed since the membership test: ask again without it
            return self.cosines(vector, [i for i in present if i in self.index])
        return {ident: float(score) for ident, score in zip(present, scores, strict=True)}

    def nearest(self, query: str, memory_filter: MemoryFilter, k: int) -> list[tuple[int, float]]:
        """(id, cosine) of the k memories closest to the query among those the filter keeps."""
        return self.nearest_to(self.embedder.embed_query(query), memory_filter, k)

    def _labelled(
        self, vector: np.ndarray, memory_filter: MemoryFilter, k: int
    ) -> list[tuple[int, float]]:
        """nearest_to for a filter of status active and owner or topic: from the labels."""
        with self._lock:
            labels = [
                (column, self._scope_codes[name].get(value, _UNKNOWN))
                for column, name in enumerate(SCOPE)
                if (value := getattr(memory_filter, name)) is not None
            ]
        ids, scores = self.index.search(vector, k, labels=labels)
        return [(int(i), float(s)) for i, s in zip(ids, scores, strict=True)]

    def nearest_to(
        self, vector: np.ndarray, memory_filter: MemoryFilter, k: int
    ) -> list[tuple[int, float]]:
        """(id, cosine) of the k memories closest to a vector among those the filter keeps.

        The index holds active memories only; an owner and topic filter is answered from the
        labels beside the vectors, any other filter by the ids SQLite finds for it. On
        PostgreSQL the database ranks, with the filter in the same query.
        """
        if self.in_database:
            assert isinstance(self.index, DatabaseIndex)
            return self.index.nearest(vector, memory_filter, k)
        unscoped = dataclasses.replace(memory_filter, owner=None, topic=None)
        if unscoped == MemoryFilter(status="active"):
            return self._labelled(vector, memory_filter, k)
        tiers = memory_filter.tiers
        if tiers is not None and dataclasses.replace(unscoped, tiers=None) == MemoryFilter(
            status="active"
        ):
            # Tiers are no label (recall without a session asks for the permanent tiers):
            # rank within the labels, over-fetched, and keep the asked tiers, read by id. That
            # is the exact answer whenever k of them are among the over-fetched, and spares the
            # id set from SQLite (26 -> 1 ms for one owner's 14,000 of 100,000 memories).
            wanted = k * TIER_OVERFETCH
            found = self._labelled(vector, memory_filter, wanted)
            records = self.store.get_many([ident for ident, _ in found])
            kept = [
                (i, c)
                for i, c in found
                if i in records and records[i].tier in tiers and records[i].status == "active"
            ]
            if len(kept) >= k or len(found) < wanted:
                return kept[:k]
        ids, scores = self.index.search(vector, k, self.store.ids_matching(memory_filter))
        return [(int(i), float(s)) for i, s in zip(ids, scores, strict=True)]

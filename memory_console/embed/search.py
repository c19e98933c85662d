"""Hybrid search: FTS5 keyword matches and vector neighbours fused by their ranks, weighted by
the query's kind, each hit with a plain relevance word."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from memory_console.embed.hits import RELEVANCE_WORDS, SEARCH_MODES, SearchHit, relevance_of
from memory_console.store import MemoryFilter, Store
from memory_console.timeutil import now_ts

if TYPE_CHECKING:
    import numpy as np

    from memory_console.embed.embedder import Embedder
    from memory_console.embed.semantic import SemanticIndex

Progress = Callable[[int, int], None]
Cancelled = Callable[[], bool]
KeywordMatch = tuple[int, float, bool]  # (id, bm25, holds every word of the query)

# Each part contributes at most this many ranked candidates to the fusion: on LoCoMo's
# development half, 100 found 0.007 more of the evidence in the top 10 than 50, 200 no more.
CANDIDATES = 100


class SearchUnavailable(Exception):
    """Semantic search was asked for before the embedder or the embeddings are ready."""


class SearchEngine:
    """Search over one store. Keyword search works at once; semantic search joins in when
    the embedder is loaded and every active memory has an embedding (see semantic.py).

    An operator's search returns the k best matches asked for, however weak: no cosine floor.
    Each hit says how well it answers the query (SearchHit.relevance); `fallback` says why a
    search is keyword only. A floor is the agent API's choice (MemoryAPI.recall's min_cosine).
    """

    def __init__(self, store: Store, manifest: str | os.PathLike[str] | None = None) -> None:
        self.store = store
        self.manifest = manifest  # the embedder's manifest (None: MEMORY_CONSOLE_MODEL_MANIFEST
        # or the repository's models/manifest.json)
        self.semantic: SemanticIndex | None = None  # set by prepare_semantic() or use_stored()
        self.semantic_error: str | None = None  # why the embedder could not load
        self.missing_vectors = 0  # active memories without a vector (use_stored() counts them)
        self._keyword_pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def _run_keyword_matches(
        self, query: str, memory_filter: MemoryFilter, limit: int
    ) -> Future[list[KeywordMatch]]:
        """Start the FTS5 ranking on a worker thread; it runs while the query is embedded."""
        with self._pool_lock:
            if self._keyword_pool is None:
                self._keyword_pool = ThreadPoolExecutor(1, thread_name_prefix="keyword-search")
        return self._keyword_pool.submit(self.store.keyword_matches, query, memory_filter, limit)

    def prepare_semantic(
        self,
        progress: Progress | None = None,
        cancelled: Cancelled | None = None,
        manifest: str | os.PathLike[str] | None = None,
    ) -> bool:
        """Load the embedder, embed memories lacking a current vector, load the index and
        follow the store's changes from then on. Raises ModelError when the model is missing
        (and keeps its words for `fallback`)."""
        from memory_console.embed.embedder import Embedder
        from memory_console.embed.semantic import SemanticIndex

        try:
            semantic = SemanticIndex(self.store, Embedder.load(manifest or self.manifest))
        except Exception as error:
            self.semantic_error = str(error) or type(error).__name__
            raise
        semantic.sync(progress, cancelled)
        self.store.listeners.append(semantic.on_change)
        self.semantic, self.semantic_error, self.missing_vectors = semantic, None, 0
        return True

    def use_stored(self, semantic: SemanticIndex) -> int:
        """Search with the stored vectors as they are, embedding nothing (a one-shot command);
        returns how many active memories lack a vector. With none stored, search stays keyword
        only and `fallback` says so."""
        self.missing_vectors = semantic.load()
        self.semantic = semantic if semantic.loaded else None
        return self.missing_vectors

    @property
    def semantic_ready(self) -> bool:
        return self.semantic is not None and self.semantic.ready

    def default_mode(self) -> str:
        return "hybrid" if self.semantic_ready else "keyword"

    @property
    def fallback(self) -> str | None:
        """One sentence for above the results when the default search is keyword only (the
        embedding model missing, vectors not made yet), or when semantic search misses the
        memories without a vector; None when search works as designed."""
        if self.semantic_error is not None:
            return f"keyword search only: the embedding model did not load ({self.semantic_error})"
        if not self.semantic_ready:
            if self.missing_vectors:
                return (
                    f"keyword search only: {self.missing_vectors:,} memories have no vector yet "
                    "(run: memory-console reindex)"
                )
            return "keyword search only: semantic search is not ready yet"
        if self.missing_vectors:
            return (
                f"semantic search misses {self.missing_vectors:,} memories that have no vector "
                "yet (run: memory-console reindex)"
            )
        return None

    def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        k: int = 20,
        memory_filter: MemoryFilter | None = None,
        now: float | None = None,
        narrow: Callable[[set[int]], set[int]] | None = None,
        embed: Callable[[str], np.ndarray] | None = None,
    ) -> list[SearchHit]:
        """The k best memories for the query, however weak (each says so in its relevance);
        an operator's search never reinforces. `narrow`: of the candidates each half found
        within the filter, the ids to keep, before they are fused (a caller's finer scope
        than a filter can say: the fusion ranks within it). `embed`: how to embed the
        query, when the caller has its own way (it runs while the keyword half does)."""
        mode = mode or self.default_mode()
        if mode not in SEARCH_MODES:
            raise ValueError(f"unknown search mode {mode!r}; one of {', '.join(SEARCH_MODES)}")
        if mode != "keyword" and not self.semantic_ready:
            raise SearchUnavailable(
                "semantic search needs embeddings; run `memory-console reindex` first"
            )
        memory_filter = memory_filter or MemoryFilter(status="active")
        moment = now_ts() if now is None else now
        if mode == "keyword":
            matches = self.store.keyword_matches(query, memory_filter, k)
            if narrow is not None:
                kept = narrow({ident for ident, _, _ in matches})
                matches = [match for match in matches if match[0] in kept]
            records = self.store.get_many([ident for ident, _, _ in matches])
            return [
                SearchHit(
                    records[ident],
                    score=-bm25,
                    matched=("keyword",),
                    keyword_rank=rank,
                    bm25=bm25,
                    relevance=relevance_of(None, holds_all, True),
                    all_words=holds_all,
                )
                for rank, (ident, bm25, holds_all) in enumerate(matches, start=1)
                if ident in records
            ]
        assert self.semantic is not None
        pending = (
            self._run_keyword_matches(query, memory_filter, max(k, CANDIDATES))
            if mode == "hybrid"
            else None
        )
        try:
            vector = (embed or self.semantic.embedder.embed_query)(query)
            semantic = self.semantic.nearest_to(vector, memory_filter, max(k, CANDIDATES))
        except BaseException:
            if pending is not None:
                wait([pending])  # never leave the ranking running behind a failed search
            raise
        keyword = pending.result() if pending is not None else []
        if narrow is not None:
            kept = narrow({ident for ident, _, _ in keyword} | {ident for ident, _ in semantic})
            keyword = [match for match in keyword if match[0] in kept]
            semantic = [pair for pair in semantic if pair[0] in kept]
        found = {ident for ident, _ in semantic}
        cosines = self.semantic.cosines(
            vector, [ident for ident, _, _ in keyword if ident not in found]
        )
        return self.fuse(query, keyword, semantic, cosines, k, moment)

    def fuse(
        self,
        query: str,
        keyword: list[KeywordMatch],
        semantic: list[tuple[int, float]],
        cosines: dict[int, float],
        k: int,
        now: float,
    ) -> list[SearchHit]:
        """Fuse keyword matches and (id, cosine) neighbours, weighted by the query's kind, and
        read the k best memories. Semantic mode passes no keyword matches."""
        from memory_console.embed.fusion import hybrid_fusion
        from memory_console.policies.exponential import effective_score

        bm25 = {ident: score for ident, score, _ in keyword}
        holds_all = {ident for ident, _, every in keyword if every}
        cosine = {**cosines, **dict(semantic)}
        keyword_rank = {ident: rank for rank, (ident, _, _) in enumerate(keyword, start=1)}
        semantic_rank = {ident: rank for rank, (ident, _) in enumerate(semantic, start=1)}
        if keyword:
            fused = [
                (hit.id, hit.score)
                for hit in hybrid_fusion(query, list(keyword_rank), list(semantic_rank))
            ][:k]
        else:
            fused = [(ident, similarity) for ident, similarity in semantic[:k]]
        records = self.store.get_many([ident for ident, _ in fused])
        hits = []
        ceiling = "strong"  # a hit never reads stronger than one ranked above it
        for ident, score in fused:
            record = records.get(ident)
            if record is None:
                continue
            similarity = cosine.get(ident)
            evidence = relevance_of(similarity, ident in holds_all, ident in bm25)
            ceiling = max(ceiling, evidence, key=RELEVANCE_WORDS.index)
            matched = tuple(
                part
                for part, ranks in (("keyword", keyword_rank), ("semantic", semantic_rank))
                if ident in ranks
            )
            strength = effective_score([record.importance], [record.created_at], now)[0]
            hits.append(
                SearchHit(
                    record,
                    score=score,
                    matched=matched,
                    keyword_rank=keyword_rank.get(ident),
                    semantic_rank=semantic_rank.get(ident),
                    bm25=bm25.get(ident),
                    cosine=similarity,
                    fused=score if keyword else None,
                    effective=float(strength),
                    relevance=ceiling,
                    all_words=ident in holds_all,
                )
            )
        return hits


def agent_engine(
    store: Store,
    *,
    semantic: bool = True,
    embedder: Embedder | None = None,
    manifest: str | None = None,
) -> tuple[SearchEngine, str | None]:
    """The search engine an agent-side caller (the agent API, the LangGraph store) reads
    through, and why semantic search is off (None when it is on or was not wanted): the index
    loaded with `embedder` when one is shared, else with the model from `manifest`, and
    following the store's changes. A missing model leaves keyword search."""
    from memory_console.embed.embedder import ModelError

    engine = SearchEngine(store)
    if not semantic:
        return engine, None
    try:
        if embedder is None:
            engine.prepare_semantic(manifest=manifest)
        else:
            from memory_console.embed.semantic import SemanticIndex

            index = SemanticIndex(store, embedder)
            index.sync()
            store.listeners.append(index.on_change)
            engine.semantic = index
    except (ModelError, OSError) as error:
        return engine, str(error)
    return engine, None


def stop_following(store: Store, engine: SearchEngine | None) -> None:
    """Take an engine's semantic index off the store's listeners (before the store closes)."""
    semantic = engine.semantic if engine is not None else None
    if semantic is not None and semantic.on_change in store.listeners:
        store.listeners.remove(semantic.on_change)

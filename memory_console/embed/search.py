"""Hybrid search: FTS5 keyword hits and vector hits fused by reciprocal rank fusion."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from memory_console.embed.hits import SEARCH_MODES, SearchHit
from memory_console.store import MemoryFilter, Store
from memory_console.timeutil import now_ts

if TYPE_CHECKING:
    from memory_console.embed.semantic import SemanticIndex

Progress = Callable[[int, int], None]
Cancelled = Callable[[], bool]

CANDIDATES = 50  # each part contributes at most this many ranked candidates to the fusion
RRF_K = 60
# Keyword hits count half in the fusion: on the labelled set (benchmarks/search_quality.py)
# equal weights let OR-matched common words push paraphrase matches out of the top 5.
PART_WEIGHTS = {"semantic": 1.0, "keyword": 0.5}
MIN_COSINE = 0.2  # below this a "semantic" neighbour is unrelated (MiniLM: unrelated ~0-0.15)


class SearchUnavailable(Exception):
    """Semantic search was asked for before the embedder or the embeddings are ready."""


class SearchEngine:
    """Search over one store. Keyword search works at once; semantic search joins in when
    the embedder is loaded and every active memory has an embedding (see semantic.py)."""

    def __init__(self, store: Store, manifest: str | os.PathLike[str] | None = None) -> None:
        self.store = store
        self.manifest = manifest  # the embedder's manifest (None: MEMORY_CONSOLE_MODEL_MANIFEST
        # or the repository's models/manifest.json)
        self.semantic: SemanticIndex | None = None  # set by prepare_semantic()
        self._keyword_pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def _run_keyword_ranking(
        self, query: str, memory_filter: MemoryFilter, limit: int
    ) -> Future[list[tuple[int, float]]]:
        """Start the FTS5 ranking on a worker thread; it runs while the query is embedded."""
        with self._pool_lock:
            if self._keyword_pool is None:
                self._keyword_pool = ThreadPoolExecutor(1, thread_name_prefix="keyword-search")
        return self._keyword_pool.submit(
            self.store.keyword_ranking, query, memory_filter, limit=limit
        )

    def prepare_semantic(
        self,
        progress: Progress | None = None,
        cancelled: Cancelled | None = None,
        manifest: str | os.PathLike[str] | None = None,
    ) -> bool:
        """Load the embedder, embed memories lacking a current vector, load the index and
        follow the store's changes from then on. Raises ModelError when the model is missing."""
        from memory_console.embed.embedder import Embedder
        from memory_console.embed.semantic import SemanticIndex

        semantic = SemanticIndex(self.store, Embedder.load(manifest or self.manifest))
        semantic.sync(progress, cancelled)
        self.store.listeners.append(semantic.on_change)
        self.semantic = semantic
        return True

    @property
    def semantic_ready(self) -> bool:
        return self.semantic is not None and self.semantic.ready

    def default_mode(self) -> str:
        return "hybrid" if self.semantic_ready else "keyword"

    def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        k: int = 20,
        memory_filter: MemoryFilter | None = None,
        now: float | None = None,
    ) -> list[SearchHit]:
        """The k best memories for the query; an operator's search never reinforces."""
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
            return [
                SearchHit(record, score=-bm25, matched=("keyword",), keyword_rank=rank, bm25=bm25)
                for rank, (record, bm25) in enumerate(
                    self.store.keyword_search(query, memory_filter, limit=k), start=1
                )
            ]
        assert self.semantic is not None
        pending = (
            self._run_keyword_ranking(query, memory_filter, max(k, CANDIDATES))
            if mode == "hybrid"
            else None
        )
        try:
            semantic = [
                (ident, cosine)
                for ident, cosine in self.semantic.nearest(query, memory_filter, max(k, CANDIDATES))
                if cosine >= MIN_COSINE
            ]
        except BaseException:
            if pending is not None:
                wait([pending])  # never leave the ranking running behind a failed search
            raise
        keyword = pending.result() if pending is not None else []
        return self.fuse(keyword, semantic, k, moment, semantic_only=mode == "semantic")

    def fuse(
        self,
        keyword: list[tuple[int, float]],
        semantic: list[tuple[int, float]],
        k: int,
        now: float,
        *,
        semantic_only: bool,
    ) -> list[SearchHit]:
        """Fuse (id, bm25) and (id, cosine) rankings and read the k best memories."""
        from memory_console.embed.fusion import reciprocal_rank_fusion
        from memory_console.policies.exponential import effective_score

        bm25 = dict(keyword)
        cosine = dict(semantic)
        rankings = {"semantic": [ident for ident, _ in semantic]}
        if not semantic_only:
            rankings["keyword"] = [ident for ident, _ in keyword]
        fused = reciprocal_rank_fusion(rankings, k=RRF_K, weights=PART_WEIGHTS)[:k]
        records = self.store.get_many([ident for ident, _, _ in fused])
        hits = []
        for ident, score, ranks in fused:
            record = records.get(ident)
            if record is None:
                continue
            effective = float(
                effective_score([record.importance], [record.created_at], now)[0]
                * max(0.0, cosine.get(ident, 0.0))
            )
            hits.append(
                SearchHit(
                    record,
                    score=cosine[ident] if semantic_only else score,
                    matched=tuple(sorted(ranks)),
                    keyword_rank=ranks.get("keyword"),
                    semantic_rank=ranks.get("semantic"),
                    bm25=bm25.get(ident),
                    cosine=cosine.get(ident),
                    fused=score,
                    effective=effective,
                )
            )
        return hits

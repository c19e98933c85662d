"""A search hit and its score breakdown: why a memory ranked where it did."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_console.store import MemoryRecord

SEARCH_MODES = ("hybrid", "semantic", "keyword")
RELEVANCE_WORDS = ("strong", "weak", "unrelated")
# Cosine thresholds of the relevance words, calibrated on the labelled set with the bundled
# MiniLM (benchmarks/search_quality.py prints the calibration): no unanswerable query's best
# hit reaches STRONG_COSINE, and 95% of the right answers are at or above WEAK_COSINE.
STRONG_COSINE = 0.45
WEAK_COSINE = 0.25


def relevance_of(cosine: float | None, holds_all_words: bool, keyword_match: bool) -> str:
    """The plain word for how well a hit answers its query: "strong" at STRONG_COSINE or
    when it holds every word of the query; "weak" at WEAK_COSINE or when it holds some of
    them; else "unrelated" (the nearest there is, and nothing more)."""
    if holds_all_words or (cosine is not None and cosine >= STRONG_COSINE):
        return "strong"
    if keyword_match or (cosine is not None and cosine >= WEAK_COSINE):
        return "weak"
    return "unrelated"


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result. `score` orders the results (higher is better); the rest explains it.

    keyword_rank / semantic_rank: 1-based rank in each part (None when that part missed);
    cosine: similarity to the query; fused: hybrid search's rank fusion score (0..1: 1 is the
    first place in both parts); effective: the memory's strength at the search's moment,
    importance x time decay (the exponential policy's effective score; recall weighs it in);
    relevance: "strong", "weak" or "unrelated" (relevance_of), never stronger than the word of
    a hit ranked above it; all_words: the memory holds every word of the query.
    """

    record: MemoryRecord
    score: float
    matched: tuple[str, ...]
    keyword_rank: int | None = None
    semantic_rank: int | None = None
    bm25: float | None = None
    cosine: float | None = None
    fused: float | None = None
    effective: float | None = None
    relevance: str = "weak"
    all_words: bool = False

    def breakdown(self) -> dict[str, Any]:
        """The scores as logged with an access and printed by `search --json`."""
        return {
            "matched": list(self.matched),
            "keyword_rank": self.keyword_rank,
            "semantic_rank": self.semantic_rank,
            "bm25": None if self.bm25 is None else round(self.bm25, 4),
            "cosine": None if self.cosine is None else round(self.cosine, 4),
            "fused": None if self.fused is None else round(self.fused, 6),
            "effective": None if self.effective is None else round(self.effective, 4),
            "relevance": self.relevance,
        }

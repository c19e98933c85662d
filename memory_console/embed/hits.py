"""A search hit and its score breakdown: why a memory ranked where it did."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_console.store import MemoryRecord

SEARCH_MODES = ("hybrid", "semantic", "keyword")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result. `score` orders the results (higher is better); the rest explains it.

    keyword_rank / semantic_rank: 1-based rank in each part (None when that part missed);
    cosine: similarity to the query; fused: the reciprocal-rank-fusion score;
    effective: importance x time decay (x similarity), the exponential policy's score.
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
        }

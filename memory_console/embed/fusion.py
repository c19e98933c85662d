"""Reciprocal rank fusion: several rankings (keyword, semantic, ...) merged into one."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import NamedTuple


class FusedHit(NamedTuple):
    """One fused result: its id, fused score and its 1-based rank in each part that found it."""

    id: int
    score: float
    ranks: dict[str, int]


def reciprocal_rank_fusion(
    rankings: Mapping[str, Iterable[int]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[FusedHit]:
    """Fuse rankings (part name -> ids, best first) by sum of weight / (k + rank).

    An id repeated within one ranking counts once, at its best rank. Results are ordered by
    fused score, highest first, then by ascending id, so equal scores always come out the same.
    weights default to 1.0 for every part.
    """
    if k < 0:
        raise ValueError(f"k must be 0 or more, not {k}")
    terms: dict[int, list[float]] = {}
    ranks: dict[int, dict[str, int]] = {}
    for part, ranking in rankings.items():
        weight = 1.0 if weights is None else float(weights.get(part, 1.0))
        for rank, raw_id in enumerate(ranking, start=1):
            item = int(raw_id)
            item_ranks = ranks.setdefault(item, {})
            if part in item_ranks:
                continue
            item_ranks[part] = rank
            terms.setdefault(item, []).append(weight / (k + rank))
    # fsum is exactly rounded, so the same ranks give the same score whatever the part order.
    hits = [FusedHit(item, math.fsum(terms[item]), ranks[item]) for item in terms]
    hits.sort(key=lambda hit: (-hit.score, hit.id))
    return hits

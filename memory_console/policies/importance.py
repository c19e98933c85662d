"""Importance score (importance, retrievals, recency) with expiry and per-owner quota eviction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from memory_console.policies.common import (
    BoolArray,
    FloatArray,
    access_anchor,
    as_float,
    elapsed_days,
)
from memory_console.policies.groups import group_codes, lowest_per_group
from memory_console.policies.params import PolicyParams


@dataclass(frozen=True)
class ImportanceParams(PolicyParams):
    """Importance score, expiry and quota (docs/ARCHITECTURE.md, "Importance score, expiry
    and quota")."""

    name: ClassVar[str] = "importance"

    expiration_days: float = 90.0
    min_importance: float = 0.1
    max_memories: int = 1000
    importance_weight: float = 0.4
    retrieval_weight: float = 0.3
    recency_weight: float = 0.3
    recency_days: float = 30.0
    saturation_retrievals: int = 10

    def _validate(self) -> None:
        self._check("expiration_days", 0.0)
        self._check("min_importance", 0.0, 1.0)
        self._check("max_memories", 1)
        for weight in ("importance_weight", "retrieval_weight", "recency_weight"):
            self._check(weight, 0.0, 1.0)
        self._check("recency_days", 0.0, low_open=True)
        self._check("saturation_retrievals", 1)


DEFAULT_IMPORTANCE = ImportanceParams()


def importance_score(
    importance: ArrayLike,
    retrieval_count: ArrayLike,
    last_accessed_at: ArrayLike,
    created_at: ArrayLike,
    now: float,
    p: ImportanceParams = DEFAULT_IMPORTANCE,
) -> FloatArray:
    """imp*0.4 + min(1, retrievals/10)*0.3 + exp(-days since access/30)*0.3, clamped to 0..1.

    Days since access count from creation for memories never accessed.
    """
    retrievals = np.clip(as_float(retrieval_count) / p.saturation_retrievals, 0.0, 1.0)
    idle_days = elapsed_days(access_anchor(last_accessed_at, created_at), now)
    score = (
        as_float(importance) * p.importance_weight
        + retrievals * p.retrieval_weight
        + np.exp(-idle_days / p.recency_days) * p.recency_weight
    )
    return np.clip(score, 0.0, 1.0)


def expire_mask(
    score: ArrayLike,
    created_at: ArrayLike,
    now: float,
    p: ImportanceParams = DEFAULT_IMPORTANCE,
) -> BoolArray:
    """Created more than expiration_days ago and scoring below min_importance -> archive.

    AND it with the rows a pass may touch (`maintainable`).
    """
    return (elapsed_days(created_at, now) > p.expiration_days) & (
        as_float(score) < p.min_importance
    )


def quota_evict(
    owner: ArrayLike,
    score: ArrayLike,
    p: ImportanceParams = DEFAULT_IMPORTANCE,
    evictable: ArrayLike | None = None,
) -> BoolArray:
    """Archive the lowest scores of each owner holding more than max_memories rows.

    Pass the rows that stay active (after expiry, in `maintain`). Rows not `evictable`
    (protected, decay_policy none) count towards the quota but are never chosen.
    """
    names, codes = group_codes(owner)
    excess = np.maximum(np.bincount(codes, minlength=names.shape[0]) - p.max_memories, 0)
    candidates = np.ones(codes.shape, dtype=np.bool_) if evictable is None else evictable
    return lowest_per_group(codes, score, excess, candidates)

"""Per-owner ranking without Python loops: group codes and lowest-k-per-group selection."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memory_console.policies.common import BoolArray, IntArray, as_bool, as_float


def group_codes(keys: ArrayLike) -> tuple[NDArray[Any], IntArray]:
    """(distinct keys, code of each row into them).

    Any sortable keys work; integer owner ids group several times faster than strings.
    """
    values = np.asarray(keys)
    if values.dtype == object:
        values = values.astype(np.str_)
    names, codes = np.unique(values, return_inverse=True)
    return names, codes.reshape(-1).astype(np.int64)


def rank_within_groups(codes: IntArray, score: ArrayLike) -> IntArray:
    """0-based rank of each row by ascending score inside its group; ties keep row order.

    A stable sort by score, then a stable sort by group, puts each group's rows together
    in score order; subtracting the position where the group starts gives the rank.
    """
    n = codes.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(as_float(score), kind="stable")
    compact = codes[order].astype(np.min_scalar_type(int(codes.max())))  # radix-sortable
    order = order[np.argsort(compact, kind="stable")]
    sorted_codes = codes[order]
    new_group = np.ones(n, dtype=np.bool_)
    new_group[1:] = sorted_codes[1:] != sorted_codes[:-1]
    starts = np.flatnonzero(new_group)
    group_start = np.repeat(starts, np.diff(np.append(starts, n)))
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n) - group_start
    return ranks


def lowest_per_group(
    codes: IntArray, score: ArrayLike, quota: IntArray, candidates: ArrayLike
) -> BoolArray:
    """Mark, in each group g, the quota[g] lowest-scoring candidate rows (NaN scores last).

    Only groups with a positive quota are ranked, so a store within its limits costs little.
    """
    chosen = np.zeros(codes.shape[0], dtype=np.bool_)
    rows = np.flatnonzero(as_bool(candidates) & (quota[codes] > 0))
    if rows.size == 0:
        return chosen
    ranks = rank_within_groups(codes[rows], as_float(score)[rows])
    chosen[rows] = ranks < quota[codes[rows]]
    return chosen

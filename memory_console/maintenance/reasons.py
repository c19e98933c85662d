"""Reasons for many rows built once per distinct case (a million decayed rows share a few
hundred combinations of periods, rate and anchor)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from memory_console.maintenance.plan import Reasons


def grouped_reasons(
    keys: Sequence[np.ndarray], build: Callable[[np.ndarray], list[str]]
) -> Reasons:
    """Reasons of rows whose text depends only on `keys` (arrays aligned with the rows).

    `build(rows)` returns the texts of the given representative rows.
    """
    n = int(keys[0].shape[0]) if keys else 0
    if n == 0:
        return Reasons([], np.zeros(0, dtype=np.int64))
    combined = np.zeros(n, dtype=np.int64)
    for key in keys:
        codes = key_codes(key)
        span = int(codes.max()) + 1
        if int(combined.max()) >= (1 << 62) // span:  # keep the product within int64
            _, combined = np.unique(combined, return_inverse=True)
            combined = combined.reshape(-1).astype(np.int64)
        combined = combined * span + codes
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    return Reasons(build(first), inverse.reshape(-1).astype(np.int64))


def key_codes(key: np.ndarray) -> np.ndarray:
    """Small non-negative integers standing for the key's values (no sort for ints)."""
    if key.dtype.kind == "b":
        return key.astype(np.int64)
    if key.dtype.kind in "iu" and int(key.max()) - int(key.min()) < (1 << 20):
        return key.astype(np.int64) - int(key.min())
    _, codes = np.unique(key, return_inverse=True)
    return codes.reshape(-1).astype(np.int64)

"""Confidence language ("stated explicitly" .. "uncertain") and the tiers used by statistics."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memory_console.confidence_words import (  # noqa: F401 - the words, re-exported
    FLOOR_TOLERANCE,
    LABEL_EDGES,
    LABELS,
    STATED_SOURCES,
    VERY_HIGH,
    confidence_label,
)
from memory_console.policies.common import IntArray, as_float

TIER_EDGES: tuple[float, ...] = (0.3, 0.5, 0.7, 0.9)
TIER_NAMES: tuple[str, ...] = (">=0.9", "0.7-0.9", "0.5-0.7", "0.3-0.5", "<0.3")


def confidence_labels(values: ArrayLike) -> NDArray[np.str_]:
    """`confidence_label` over an array; NaN reads "uncertain"."""
    c = as_float(values)
    conditions = [c >= edge - FLOOR_TOLERANCE for edge in LABEL_EDGES]
    return np.select(conditions, LABELS[:-1], default=LABELS[-1]).astype(np.str_)


def tier_index(values: ArrayLike) -> IntArray:
    """Index into TIER_NAMES for each confidence: 0 for >=0.9 down to 4 for <0.3 (and NaN)."""
    c = np.nan_to_num(as_float(values), nan=-1.0)
    edges = np.asarray(TIER_EDGES) - FLOOR_TOLERANCE
    return (len(TIER_EDGES) - np.digitize(c, edges)).astype(np.int64)


def tier_counts(values: ArrayLike) -> IntArray:
    """How many confidences fall in each tier, in TIER_NAMES order."""
    return np.bincount(tier_index(values), minlength=len(TIER_NAMES)).astype(np.int64)

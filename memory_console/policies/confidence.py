"""Confidence language ("stated explicitly" .. "uncertain") and the tiers used by statistics."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memory_console.policies.common import FLOOR_TOLERANCE, IntArray, as_float

# Thresholds are compared with a tolerance so 0.9 reached through float arithmetic
# (0.8 + 0.1 = 0.9000000000000001, 0.95 * 0.947... ) lands in the tier a person expects.
LABEL_EDGES: tuple[float, ...] = (0.9, 0.7, 0.5)
LABELS: tuple[str, ...] = ("stated explicitly", "high confidence", "inferred", "uncertain")

TIER_EDGES: tuple[float, ...] = (0.3, 0.5, 0.7, 0.9)
TIER_NAMES: tuple[str, ...] = (">=0.9", "0.7-0.9", "0.5-0.7", "0.3-0.5", "<0.3")


# Sources where a person said the memory in so many words; "stated explicitly" is true of
# no other memory, however high its confidence (a session review infers what it keeps).
STATED_SOURCES = frozenset({"user_directive", "manual"})
VERY_HIGH = "very high confidence"  # the top tier's words for a memory nobody stated


def confidence_label(c: float, source: str | None = None) -> str:
    """The words shown beside a confidence value; given the memory's `source`, the top tier
    reads "stated explicitly" only for a memory a person stated (STATED_SOURCES)."""
    for edge, label in zip(LABEL_EDGES, LABELS, strict=False):
        if c >= edge - FLOOR_TOLERANCE:
            if label == LABELS[0] and source is not None and source not in STATED_SOURCES:
                return VERY_HIGH
            return label
    return LABELS[-1]


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

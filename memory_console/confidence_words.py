"""The words shown beside a confidence ("stated explicitly" .. "uncertain"), without numpy:
the CLI's output and the console's table read them in processes that never load it
(policies/confidence.py holds the same words over arrays)."""

from __future__ import annotations

# Thresholds are compared with a tolerance so 0.9 reached through float arithmetic
# (0.8 + 0.1 = 0.9000000000000001, 0.95 * 0.947... ) lands in the tier a person expects.
FLOOR_TOLERANCE = 1e-9
LABEL_EDGES: tuple[float, ...] = (0.9, 0.7, 0.5)
LABELS: tuple[str, ...] = ("stated explicitly", "high confidence", "inferred", "uncertain")

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

"""Fusing keyword and semantic rankings: score fusion weighted by the query's kind, and
reciprocal rank fusion."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

# The semantic part's weight in score fusion per query kind (the keyword part has the rest),
# chosen on the labelled set (benchmarks/search_quality.py): exact terms lean on keywords,
# questions on meaning. Questions plateau from 0.8 to 0.9 (recall@5 equal, MRR best at 0.9);
# exact terms lose their first places above 0.5.
SEMANTIC_WEIGHT = {"exact": 0.5, "question": 0.9}
QUESTION_WORDS = frozenset(
    """what which who whom whose when where why how does do did is are was were can could
    should would will has have had am""".split()
)
QUOTED = re.compile(r"[\"“”„]|(?:^|\s)['‘][^'’]+['’](?:\s|$)")
# A word with a digit, an underscore, an inner capital (CrashLoopBackOff, gRPC), @ # / :, a
# dot inside (api.example) or a double dash is a code, an id or a name a person typed exactly.
CODE_LIKE = re.compile(r"\d|_|[a-z][A-Z]|[@#/:]|\w\.\w|--")


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


def query_kind(text: str) -> str:
    """ "exact" for terms typed to be found as written (a quoted phrase, a code or id, a name,
    one or two words), "question" for a request in words (a question, or three words or more).
    """
    stripped = text.strip()
    words = stripped.split()
    if QUOTED.search(stripped):
        return "exact"
    if words and (words[0].lower() in QUESTION_WORDS or stripped.endswith("?")):
        return "question"
    if len(words) <= 2 or any(CODE_LIKE.search(word) for word in words):
        return "exact"
    if all(word[:1].isupper() for word in words):
        return "exact"  # a name: "Lena Vogel", "Project Hail Mary"
    return "question"


def score_fusion(
    semantic: Sequence[tuple[int, float]],
    keyword: Sequence[tuple[int, float]],
    semantic_weight: float,
    cosines: Mapping[int, float] | None = None,
) -> list[tuple[int, float]]:
    """Fuse (id, cosine) best first and (id, bm25) best first into (id, score), best first.

    Each part is scaled to 0..1 before weighting: cosine by min-max over the semantic list (the
    best neighbour 1, the last 0: MiniLM's cosines crowd into a narrow band), bm25 relative to
    the best match (SQLite's bm25 is negative, lower better). A keyword match missing from the
    semantic list takes its cosine from `cosines` when known (usually below the list: 0).
    Unlike rank fusion, a memory found by both parts cannot outrank a much better match of one
    part on rank alone. Equal scores come out by ascending id.
    """
    known = dict(cosines or {})
    known.update(semantic)
    scores: dict[int, float] = {}
    if semantic:
        high, low = semantic[0][1], semantic[-1][1]
        for ident in {ident for ident, _ in semantic} | {ident for ident, _ in keyword}:
            if ident in known:
                scaled = (known[ident] - low) / (high - low) if high > low else 1.0
                scores[ident] = semantic_weight * min(1.0, max(0.0, scaled))
    if keyword:
        best = min(bm25 for _, bm25 in keyword)
        for ident, bm25 in keyword:
            relative = bm25 / best if best < 0 else 1.0
            scores[ident] = scores.get(ident, 0.0) + (1.0 - semantic_weight) * relative
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))

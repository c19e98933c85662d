"""Fusing keyword and semantic rankings: reciprocal rank fusion, weighted by the query's kind."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

# Hybrid search fuses the two rankings by reciprocal rank (weight / (RRF_K + rank) per part),
# each part contributing its best CANDIDATES (embed/search.py). Chosen on the development half of
# LoCoMo, public conversations (benchmarks/search_locomo.py; docs/ARCHITECTURE.md, "Search"):
# score fusion (min-max cosine, bm25 relative to the best) never passed the keyword half by
# more than 0.03 whatever its weight, and lost to it on open-domain questions; RRF with a small
# k (10: a first place counts, a fiftieth barely) beat the better half on every category. A
# larger k flattens the ranks into a vote and fell below the keyword half.
RRF_K = 10
# Each part's weight per query kind: a question in words trusts both rankings alike; exact
# terms (a name, an id, a quoted phrase) trust the keyword ranking twice as much.
PART_WEIGHTS = {
    "question": {"keyword": 1.0, "semantic": 1.0},
    "exact": {"keyword": 2.0, "semantic": 1.0},
}
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


def hybrid_fusion(query: str, keyword: Sequence[int], semantic: Sequence[int]) -> list[FusedHit]:
    """The keyword and semantic rankings (ids, best first) fused by reciprocal rank with the
    weights of the query's kind; each hit's score scaled to 0..1, where 1 is the first place in
    both parts and 0 is found by neither. Equal scores come out by ascending id."""
    weights = PART_WEIGHTS[query_kind(query)]
    rankings = {"keyword": keyword, "semantic": semantic}
    top = math.fsum(weights[part] / (RRF_K + 1) for part, ranking in rankings.items() if ranking)
    fused = reciprocal_rank_fusion(rankings, RRF_K, weights)
    return [FusedHit(hit.id, hit.score / top, hit.ranks) for hit in fused] if top else []

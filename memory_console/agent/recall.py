"""Recall's ranking: the search, the floor, the effective score, the newest value of a fact
first; and the memories a recalled one superseded.

See docs/ARCHITECTURE.md, "The agent API". Ranking reads only; MemoryAPI.recall then records
the access (which reinforces what it returns).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memory_console.agent.results import Recalled
from memory_console.agent.rules import facts
from memory_console.store import MemoryFilter, Store
from memory_console.store.vocab import SESSION_TIERS, TIERS

if TYPE_CHECKING:
    from memory_console.embed.hits import SearchHit
    from memory_console.embed.search import SearchEngine

CANDIDATE_FACTOR = 3  # recall re-ranks this many times k of the best search hits
# Recall ranks by relevance x (1 - STRENGTH_SHARE + STRENGTH_SHARE x strength), strength being
# importance x time decay (0..1): a memory's strength moves its score by at most this share, so
# it reorders hits of similar relevance and never lifts a weak match over a clearly better one.
# On LoCoMo's development half (benchmarks/search_locomo.py) recall@10 fell from hybrid's as
# the share grew: see docs/ARCHITECTURE.md, "Recall keeps relevance first".
STRENGTH_SHARE = 0.1


def ranked(
    engine: SearchEngine,
    query: str,
    memory_filter: MemoryFilter,
    k: int,
    min_cosine: float | None,
    now: float,
) -> dict[int, dict[str, Any]]:
    """The k best memories of `memory_filter` for a query, best first: memory id -> its score
    breakdown. Hybrid search (keyword search when semantic search is not ready), the best 3k
    kept above the floor and re-ranked by relevance weighed with strength (effective_of), the
    newest of a slot first."""
    mode = "hybrid" if engine.semantic_ready else "keyword"
    hits = above_floor(
        engine.search(
            query,
            mode=mode,
            k=max(k * CANDIDATE_FACTOR, 10),
            memory_filter=memory_filter,
            now=now,
        ),
        min_cosine,
    )
    best = newest_first_per_slot(
        sorted(
            ((effective_of(hit, hits, now), hit) for hit in hits),
            key=lambda pair: (-pair[0], -pair[1].score),
        )
    )[:k]
    return {
        hit.record.id: {**hit.breakdown(), "mode": mode, "effective": round(effective, 4)}
        for effective, hit in best
    }


def with_superseded(store: Store, recalled: list[Recalled]) -> list[Recalled]:
    """Each memory followed by the memories it superseded, the latest first, and theirs."""
    out: list[Recalled] = []
    seen = {item.id for item in recalled}
    for item in recalled:
        out.append(item)
        chain = [item.id]
        while chain:
            older = store.superseded_by_each(chain)
            ids = [i for n in chain for i in reversed(older.get(n, [])) if i not in seen]
            seen.update(ids)
            records = store.get_many(ids)
            for ident in ids:
                newer = records[ident].superseded_by
                out.append(Recalled(records[ident], {"superseded_by": newer}))
            chain = ids
    return out


def check_session(session_id: str | None) -> None:
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise ValueError("session_id must be a non-empty string")


def recall_filter(
    owner: str,
    tier: str | Sequence[str] | None,
    session_id: str | None,
    topic: str | None = None,
) -> MemoryFilter | None:
    """The active memories recall may return: the asked tiers, working and short-term ones
    only with a session (and then only that session's); None when nothing is left."""
    check_session(session_id)
    wanted = TIERS if tier is None else ((tier,) if isinstance(tier, str) else tuple(tier))
    unknown = [name for name in wanted if name not in TIERS]
    if unknown:
        raise ValueError(f"unknown tier {unknown[0]!r}; one of {', '.join(TIERS)}")
    if session_id is None:
        wanted = tuple(name for name in wanted if name not in SESSION_TIERS)
    if not wanted:
        return None
    return MemoryFilter(
        owner=owner,
        status="active",
        topic=topic,
        tiers=None if set(wanted) == set(TIERS) else tuple(dict.fromkeys(wanted)),
        session_id=session_id,
    )


def newest_first_per_slot(
    ranked: list[tuple[float, SearchHit]],
) -> list[tuple[float, SearchHit]]:
    """The ranking with the memories of one slot (docs/ARCHITECTURE.md, "Facts that change")
    reordered among the places they hold, newest first: when an old and a new value of a fact
    are both active, the new one takes the better place, and the rest stays as ranked."""
    places: dict[str, list[int]] = {}
    for position, (_, hit) in enumerate(ranked):
        stated = facts.slot_of(hit.record.content)
        if stated is not None:
            places.setdefault(stated.slot, []).append(position)
    out = list(ranked)
    for positions in places.values():
        if len(positions) > 1:
            newest = sorted(
                (ranked[p] for p in positions),
                key=lambda pair: (-pair[1].record.created_at, -pair[1].record.id),
            )
            for position, pair in zip(positions, newest, strict=True):
                out[position] = pair
    return out


def above_floor(hits: list[SearchHit], min_cosine: float | None) -> list[SearchHit]:
    """The hits recall may return: at or above min_cosine, holding every word of the query,
    or without a cosine (keyword search); all of them when min_cosine is None."""
    if min_cosine is None:
        return hits
    return [hit for hit in hits if hit.cosine is None or hit.cosine >= min_cosine or hit.all_words]


def effective_of(hit: SearchHit, hits: Sequence[SearchHit], now: float) -> float:
    """The score recall ranks by: the hit's relevance (hybrid search's fused score, or its
    bm25 relative to the best in keyword search) x (1 - STRENGTH_SHARE + STRENGTH_SHARE x
    strength), strength being importance x time decay at `now` (0..1)."""
    from memory_console.policies.exponential import effective_score

    if hit.bm25 is not None and hit.fused is None and hit.cosine is None:
        best = min((h.bm25 for h in hits if h.bm25 is not None), default=0.0)
        relevance = hit.bm25 / best if best < 0 else 1.0
    else:
        relevance = hit.score
    if hit.effective is not None:
        strength = hit.effective
    else:
        record = hit.record
        strength = float(effective_score([record.importance], [record.created_at], now)[0])
    strength = min(1.0, max(0.0, strength))
    return relevance * (1.0 - STRENGTH_SHARE + STRENGTH_SHARE * strength)

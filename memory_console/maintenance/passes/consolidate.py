"""The consolidate pass: near-duplicates within one owner and topic become one memory.

Groups come from cosine similarity of the stored embeddings (>= min_cosine), or, in a store
without embeddings, from keyword Jaccard similarity (>= min_jaccard, groups of at least
min_keyword_group). Identical texts (or keyword sets) are compared once, so a store that
repeats itself costs what its distinct texts cost. The merged memory is extractive (see
docs/ARCHITECTURE.md, 'Consolidation'). Planning reads the store and nothing else: a
configured merge command runs only when the plan is applied (maintenance/merge_command.py).
Reasons are data (the measure, its threshold, the group's size), worded only when shown.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from memory_console.maintenance.changes import ChangeSet, NewMemory, PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.reasons import Reason
from memory_console.maintenance.registry import PassSpec
from memory_console.policies.params import PolicyParams
from memory_console.store import MemoryRecord
from memory_console.store.consolidation import candidate_rows, stored_models, vectors_of

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
BLOCK = 2048  # rows per similarity block: bounds memory at BLOCK x distinct vectors


@dataclass(frozen=True)
class ConsolidateParams(PolicyParams):
    """Consolidation: similarity thresholds and the keyword fallback."""

    name: ClassVar[str] = "consolidate"

    min_cosine: float = 0.92
    min_jaccard: float = 0.5
    min_keyword_group: int = 3
    keyword_mode: int = 0  # 1: group by keywords even where embeddings exist
    max_group: int = 100  # larger groups are merged in parts of at most this many, by id

    def _validate(self) -> None:
        self._check("min_cosine", 0.0, 1.0, low_open=True)
        self._check("min_jaccard", 0.0, 1.0, low_open=True)
        self._check("min_keyword_group", 2)
        self._check("keyword_mode", 0, 1)
        self._check("max_group", 2)


def leader_groups(order: Sequence[int], neighbours: dict[int, set[int]]) -> dict[int, list[int]]:
    """Leader clustering: in `order`, each item not yet taken starts a group with every
    untaken neighbour. Every member is similar to its group's first item, so no chain of
    pairwise look-alikes drags unrelated memories together (connected components would)."""
    taken: set[int] = set()
    groups: dict[int, list[int]] = {}
    for item in order:
        if item in taken:
            continue
        members = [item] + sorted(j for j in neighbours.get(item, ()) if j not in taken)
        taken.update(members)
        groups[item] = members
    return groups


def vector_groups(keys: list[str], matrix: np.ndarray, threshold: float) -> list[list[int]]:
    """Groups (positions) of vectors within `threshold` cosine of their group's first; rows
    with the same key (content hash) are one vector, compared once."""
    distinct = list(dict.fromkeys(keys))
    first = {key: keys.index(key) for key in reversed(distinct)}
    reps = np.array([first[key] for key in distinct], dtype=np.int64)
    vectors = matrix[reps]
    neighbours: dict[int, set[int]] = {}
    for start in range(0, len(reps), BLOCK):
        sims = vectors[start : start + BLOCK] @ vectors.T
        rows, cols = np.nonzero(sims >= threshold)
        for row, col in zip(rows.tolist(), cols.tolist(), strict=True):
            if start + row != col:
                neighbours.setdefault(start + row, set()).add(col)
    position_of = {key: i for i, key in enumerate(distinct)}
    copies: dict[int, list[int]] = {}
    for position, key in enumerate(keys):
        copies.setdefault(position_of[key], []).append(position)
    groups = leader_groups(range(len(distinct)), neighbours)
    expanded = [[p for d in members for p in copies[d]] for members in groups.values()]
    return [group for group in expanded if len(group) >= 2]


def keyword_groups(
    keyword_sets: list[frozenset[str]], threshold: float, smallest: int
) -> list[list[int]]:
    """Groups (positions) of at least `smallest` whose keyword sets have Jaccard >= threshold
    with their group's first; identical sets are compared once."""
    distinct = list(dict.fromkeys(s for s in keyword_sets if s))
    postings: dict[str, list[int]] = {}
    for i, keywords in enumerate(distinct):
        for word in keywords:
            postings.setdefault(word, []).append(i)
    neighbours: dict[int, set[int]] = {}
    for i, keywords in enumerate(distinct):
        shared: Counter[int] = Counter()
        for word in keywords:
            shared.update(postings[word])
        neighbours[i] = {
            j
            for j, common in shared.items()
            if j != i and common / (len(keywords) + len(distinct[j]) - common) >= threshold
        }
    position_of = {keywords: i for i, keywords in enumerate(distinct)}
    copies: dict[int, list[int]] = {}
    for position, keywords in enumerate(keyword_sets):
        if keywords:
            copies.setdefault(position_of[keywords], []).append(position)
    groups = leader_groups(range(len(distinct)), neighbours)
    expanded = [[p for d in members for p in copies[d]] for members in groups.values()]
    return [group for group in expanded if len(group) >= smallest]


def distinct_sentences(contents: Sequence[str]) -> str:
    """The members' sentences in order, each once (compared without case and spacing)."""
    seen: set[str] = set()
    kept: list[str] = []
    for content in contents:
        for sentence in SENTENCE_END.split(content.strip()):
            key = " ".join(sentence.lower().split()).rstrip(".!?")
            if key and key not in seen:
                seen.add(key)
                kept.append(sentence.strip())
    return " ".join(kept)


def most_common(values: Sequence[str]) -> str:
    return Counter(values).most_common(1)[0][0]


def extractive_merge(group: Sequence[MemoryRecord]) -> dict[str, Any]:
    """The merged memory: distinct sentences, keyword union, max importance and confidence,
    summed retrievals, earliest creation, latest access."""
    ordered = sorted(group, key=lambda c: (c.created_at, c.id))
    strongest = max(group, key=lambda c: (c.confidence, -c.id))
    accesses = [c.last_accessed_at for c in group if c.last_accessed_at is not None]
    confidence = max(c.confidence for c in group)
    return {
        "owner": strongest.owner,
        "topic": strongest.topic,
        "tier": strongest.tier,
        "memory_type": most_common([c.memory_type for c in ordered]),
        "title": strongest.title,
        "content": distinct_sentences([c.content for c in ordered]),
        "keywords": list(dict.fromkeys(k for c in ordered for k in c.keywords)),
        "source": "consolidation",
        "importance": max(c.importance for c in group),
        "confidence": confidence,
        "base_confidence": confidence,
        "retrieval_count": sum(c.retrieval_count for c in group),
        "created_at": ordered[0].created_at,
        "last_accessed_at": max(accesses) if accesses else None,
        "decay_policy": most_common([c.decay_policy for c in ordered]),
        "metadata": {"consolidated_from": [c.id for c in ordered]},
    }


def find_groups(
    frame: Frame, candidates: list[MemoryRecord], p: ConsolidateParams
) -> tuple[list[list[MemoryRecord]], str]:
    """Groups of near-duplicates per owner and topic, and the mode that found them."""
    assert frame.store is not None
    store = frame.store
    models = store.read(stored_models)
    by_scope: dict[tuple[str, str], list[MemoryRecord]] = {}
    for candidate in candidates:
        by_scope.setdefault((candidate.owner, candidate.topic), []).append(candidate)
    use_vectors = not p.keyword_mode and len(models) == 1
    groups: list[list[MemoryRecord]] = []
    for members in by_scope.values():
        if len(members) < 2:
            continue
        if use_vectors:
            ids, hashes, matrix = store.read(vectors_of, models[0], [c.id for c in members])
            if len(ids) < 2:
                continue
            with_vector = {c.id: c for c in members}
            embedded = [with_vector[int(i)] for i in ids]
            for group in vector_groups(hashes, matrix, p.min_cosine):
                groups.append([embedded[i] for i in group])
        else:
            sets = [frozenset(k.lower() for k in c.keywords) for c in members]
            for group in keyword_groups(sets, p.min_jaccard, p.min_keyword_group):
                groups.append([members[i] for i in group])
    parts = [
        ordered[start : start + p.max_group]
        for group in groups
        for ordered in [sorted(group, key=lambda c: c.id)]
        for start in range(0, len(ordered), p.max_group)
    ]
    return [part for part in parts if len(part) >= 2], ("embeddings" if use_vectors else "keywords")


def plan_consolidate(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    if frame.store is None:
        raise ValueError("the consolidate pass reads memory texts: the frame needs its store")
    p = params.of(ConsolidateParams)
    open_rows = frame.maintainable()
    open_ids = set(frame.ids[open_rows].tolist())
    candidates = [
        record for record in frame.store.read(candidate_rows, frame.scope) if record.id in open_ids
    ]
    groups, mode = find_groups(frame, candidates, p)
    measure, threshold = (
        ("cosine", p.min_cosine) if mode == "embeddings" else ("keyword Jaccard", p.min_jaccard)
    )
    new_memories: list[NewMemory] = []
    member_ids: list[int] = []
    into: list[int] = []
    reasons: list[Reason] = []
    for number, group in enumerate(sorted(groups, key=lambda g: min(c.id for c in g)), start=1):
        key = -number
        ids = sorted(c.id for c in group)
        why = Reason.of(
            "merge_group",
            size=len(group),
            measure=measure,
            threshold=threshold,
            owner=group[0].owner,
            topic=group[0].topic,
        )
        new_memories.append(
            NewMemory(key, "consolidate", extractive_merge(group), why, kind="created")
        )
        member = Reason.of("merged_into", others=len(ids) - 1, measure=measure, threshold=threshold)
        for ident in ids:
            member_ids.append(ident)
            into.append(key)
            reasons.append(member)
    result = PassResult(
        new_memories=new_memories,
        figures={
            "groups": len(groups),
            "consolidated": len(member_ids),
            "merge_command_failures": 0,  # the merge command runs at review or apply
            "keyword_mode": int(mode == "keywords"),
        },
    )
    if member_ids:
        count = len(member_ids)
        change = ChangeSet.build(
            "consolidate",
            "consolidated",
            np.array(member_ids),
            {
                "status": (np.full(count, "active"), np.full(count, "consolidated")),
                "consolidated_into": (
                    np.full(count, None, dtype=object),
                    np.array(into, dtype=object),
                ),
            },
            reasons,
        )
        frame.record(change)
        result.change_sets.append(change)
    return result


PASS = PassSpec(
    name="consolidate",
    plan=plan_consolidate,
    summary="merge near-duplicate memories of one owner and topic into one",
    order=25,
    scope="maintainable",
    params_class=ConsolidateParams,
)

"""The consolidate pass: the same fact said again, within one owner and topic, becomes one memory.

Conservative by design (see docs/ARCHITECTURE.md, 'Consolidation'): two memories are near
duplicates when their texts are equal once case, spacing and punctuation are set aside, or when
both have a current vector, their cosine reaches min_cosine and no guard vetoes the pair (a
differing number, date, weekday or month, negation, name or slot value; an episodic memory
must be near-identical in words). A memory without a vector merges only with exact duplicates,
and the plan says how many lacked one. Groups form around the best-supported memory (most
retrievals, then confidence, then newest), whose wording the merged memory keeps, so a second
plan at the same time finds nothing more to merge. Planning reads the store and nothing else: a
configured merge command runs only when the plan is applied (maintenance/merge_command.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, ClassVar, Self

import numpy as np

from memory_console.agent.rules.facts import differences
from memory_console.agent.rules.relation import relate
from memory_console.embed.embedder import content_hash, embedding_text
from memory_console.maintenance.changes import ChangeSet, NewMemory, PassResult
from memory_console.maintenance.frame import Frame
from memory_console.maintenance.params import MaintenanceParams
from memory_console.maintenance.reasons import Reason
from memory_console.maintenance.registry import PassSpec
from memory_console.policies import (
    ExponentialParams,
    PeriodicParams,
    RelevanceParams,
    cleanup_flags,
    maintainable,
    relevance_eligible,
)
from memory_console.policies.forecast_arrays import confidence_at, decays_mask
from memory_console.policies.params import PolicyParams
from memory_console.store import MemoryRecord, Store
from memory_console.store.consolidation import (
    candidate_scopes,
    scope_candidates,
    stored_models,
    vectors_of,
)
from memory_console.store.settings import CONSOLIDATE_MIN_COSINE
from memory_console.timeutil import MONTHS, WEEKDAYS

BLOCK = 2048  # rows per similarity block: bounds memory at BLOCK x vectors in one scope
NEAR_IDENTICAL = 0.9  # word-sequence similarity an episodic pair needs (difflib ratio)
EPISODE_WINDOW = 86400.0  # seconds between two tellings of one episode

# Punctuation that is not inside a number ("1.20.5", "10:00" and "555-0141" keep theirs).
_PUNCTUATION = re.compile(r"(?<!\d)[^\w\s]|[^\w\s](?!\d)")
_WHEN_WORDS = frozenset(
    [*MONTHS, *WEEKDAYS]
    + "today tonight yesterday tomorrow morning afternoon evening night weekend week month "
    "year spring summer autumn fall winter q1 q2 q3 q4 ago last next".split()
)
_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty hundred thousand "
    "million billion half double twice first second third fourth fifth once".split()
)
_NEGATIONS = frozenset("not no never nor without cannot neither none nobody nothing".split())
_TOKEN = re.compile(r"\d[\d.,:/-]*\d|[\w']+")


@dataclass(frozen=True)
class ConsolidateParams(PolicyParams):
    """Consolidation: the cosine at which two memories may state the same fact."""

    name: ClassVar[str] = "consolidate"

    min_cosine: float = CONSOLIDATE_MIN_COSINE  # chosen on tests/data/consolidation_pairs.jsonl

    # The keyword mode and the split of large groups are gone (keyword overlap merged
    # different facts; split parts merged again on the next run): stores and plan files that
    # still name them keep working.
    RETIRED: ClassVar[tuple[str, ...]] = (
        "min_jaccard",
        "min_keyword_group",
        "keyword_mode",
        "max_group",
    )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        return super().from_dict({k: v for k, v in d.items() if k not in cls.RETIRED})

    def _validate(self) -> None:
        self._check("min_cosine", 0.0, 1.0, low_open=True)


def text_key(text: str) -> str:
    """The text with case, spacing and punctuation set aside: equal keys are exact duplicates."""
    return " ".join(_PUNCTUATION.sub(" ", text.casefold()).split())


def markers(text: str) -> frozenset[str]:
    """What tells one episode or fact from another: numbers, date and day words, negations."""
    words = _TOKEN.findall(text.casefold().replace("n't", " not"))
    return frozenset(
        w.rstrip(".,:/-")
        for w in words
        if any(c.isdigit() for c in w) or w in _WHEN_WORDS or w in _NUMBER_WORDS or w in _NEGATIONS
    )


# Words a rewording swaps freely; any other small edit is a changed value or an added detail.
_SYNONYMS = (
    frozenset(["prefers", "likes", "loves", "enjoys", "favours", "favors", "wants"]),
    frozenset(["chose", "decided to use", "decided on", "picked", "selected", "went with"]),
    frozenset(["uses", "using", "use"]),
    frozenset(["is", "was", "are"]),
)
_STOPWORDS = frozenset(
    "a an the of in on at to for with and or is are was be it its this that there every each "
    "some as by from user has have also always now".split()
)
SMALL_EDIT = 3  # words: an edit this short inside a shared sentence changes what it says


def small_edits(one: str, other: str) -> list[tuple[str, str]]:
    """The short edits between two texts that otherwise read alike: a value swapped for
    another ("backend" for "frontend", "computer science" for "mathematics") or a detail
    added ("Deploys scheduler with ..."); synonyms and filler words aside."""
    a, b = text_key(one).split(), text_key(other).split()
    edits = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        left, right = a[i1:i2], b[j1:j2]
        if op == "equal" or (op == "replace" and max(len(left), len(right)) > SMALL_EDIT):
            continue  # a long replacement is a rewording; words only added are a detail
        said, instead = " ".join(left), " ".join(right)
        if any(said in group and instead in group for group in _SYNONYMS):
            continue
        # Words moved elsewhere in the sentence (or filler) change nothing it says.
        if not (set(left) - set(b) - _STOPWORDS or set(right) - set(a) - _STOPWORDS):
            continue
        edits.append((said, instead))
    return edits


_POSSESSIVE = re.compile(r"(?<=\w)'s\b")
_PLURAL_DAY = re.compile(r"\b(" + "|".join(WEEKDAYS) + r")s\b", re.IGNORECASE)


def plain(text: str) -> str:
    """The text with what a rewording changes freely made alike: possessives ("Ben's email",
    "email for Ben") and plural weekdays ("on Tuesdays", "every Tuesday")."""
    return _PLURAL_DAY.sub(r"\1", _POSSESSIVE.sub("", text))


def vetoed(one: str, other: str) -> bool:
    """Whether two similar texts state different facts or episodes, whatever their cosine:
    the relation judgement (agent/rules/relation.py) takes them apart in either order ("X over
    Y" / "Y over X", "A reports to B" / "B reports to A"), or they differ in a number, date,
    negation or a short edit."""
    if relate(one, other).blocks_merge or relate(other, one).blocks_merge:
        return True
    one, other = plain(one), plain(other)
    return (
        markers(one) != markers(other)
        or bool(differences(one, other))
        or bool(small_edits(one, other))
    )


def near_identical(one: str, other: str) -> bool:
    return SequenceMatcher(None, text_key(one).split(), text_key(other).split()).ratio() >= (
        NEAR_IDENTICAL
    )


def episodic(record: MemoryRecord) -> bool:
    return record.memory_type == "episodic" or record.tier == "episodic"


def support(record: MemoryRecord) -> tuple[float, ...]:
    """Best-supported first: most retrievals, then highest confidence, then newest."""
    return (-record.retrieval_count, -record.confidence, -record.created_at, -record.id)


def star_groups(
    members: Sequence[MemoryRecord], neighbours: dict[int, set[int]]
) -> list[list[int]]:
    """Groups (positions) around leaders taken best-supported first, each with its untaken
    neighbours. Leaders are never neighbours of one another and a memory left alone has no
    untaken neighbour, so merging every group (in its leader's words) leaves nothing that a
    second plan would merge."""
    order = sorted(range(len(members)), key=lambda i: support(members[i]))
    taken: set[int] = set()
    groups: list[list[int]] = []
    for leader in order:
        if leader in taken:
            continue
        group = [leader] + sorted(j for j in neighbours.get(leader, ()) if j not in taken)
        taken.update(group)
        if len(group) >= 2:
            groups.append(group)
    return groups


class PairJudge:
    """Whether two memories state the same fact, for the members of one plan: the pass's one
    judge of a pair, with what depends on text alone worked out once per text or pair of
    texts (a store says the same few thousand texts again and again)."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.keys: dict[str, str] = {}
        self.vetoes: dict[tuple[str, str], bool] = {}
        self.near: dict[tuple[str, str], bool] = {}

    def key(self, text: str) -> str:
        found = self.keys.get(text)
        if found is None:
            found = self.keys[text] = text_key(text)
        return found

    def vetoed(self, one: str, other: str) -> bool:
        found = self.vetoes.get((one, other))
        if found is None:
            found = self.vetoes[(one, other)] = vetoed(one, other)
        return found

    def same_episode(self, one: MemoryRecord, other: MemoryRecord) -> bool:
        """Episodic memories are the same episode only when told the same day in
        near-identical words: "on Tuesday" written a week apart is another Tuesday."""
        if abs(one.created_at - other.created_at) > EPISODE_WINDOW:
            return False
        pair = (one.content, other.content)
        found = self.near.get(pair)
        if found is None:
            found = self.near[pair] = near_identical(*pair)
        return found

    def same_fact(self, one: MemoryRecord, other: MemoryRecord, cosine: float | None) -> bool:
        """Equal text keys, or (`cosine` given: both have a vector) a cosine >= threshold
        with no veto; episodic ones must be the same episode."""
        if (episodic(one) or episodic(other)) and not self.same_episode(one, other):
            return False
        if self.key(one.content) == self.key(other.content):
            return True
        return (
            cosine is not None
            and cosine >= self.threshold
            and not self.vetoed(one.content, other.content)
        )


def scope_neighbours(
    members: Sequence[MemoryRecord],
    vectors: dict[int, np.ndarray],
    threshold: float,
    judge: PairJudge | None = None,
) -> dict[int, set[int]]:
    """Near-duplicate pairs among one scope's members (positions): equal text keys, or (both
    with a vector) cosine >= threshold with no veto."""
    judge = judge if judge is not None and judge.threshold == threshold else PairJudge(threshold)
    neighbours: dict[int, set[int]] = {}

    def join(one: int, other: int) -> None:
        neighbours.setdefault(one, set()).add(other)
        neighbours.setdefault(other, set()).add(one)

    keys = [judge.key(record.content) for record in members]
    by_key: dict[str, list[int]] = {}
    for position, key in enumerate(keys):
        by_key.setdefault(key, []).append(position)
    for same in by_key.values():
        if len(same) < 2:
            continue
        lasting = [p for p in same if not episodic(members[p])]
        if len(lasting) == len(same):  # equal keys and no episode among them: all one fact
            for one in same:
                neighbours.setdefault(one, set()).update(p for p in same if p != one)
            continue
        for i, one in enumerate(same):
            for other in same[i + 1 :]:
                if judge.same_fact(members[one], members[other], None):
                    join(one, other)
    with_vector = [p for p, record in enumerate(members) if record.id in vectors]
    if len(with_vector) < 2:
        return neighbours
    # Pairs of equal keys were settled above, whatever their cosine: only the others remain.
    key_numbers = {key: number for number, key in enumerate(by_key)}
    key_of = np.array([key_numbers[keys[p]] for p in with_vector])
    matrix = np.stack([vectors[members[p].id] for p in with_vector])
    for start in range(0, len(with_vector), BLOCK):
        sims = matrix[start : start + BLOCK] @ matrix.T
        rows, cols = np.nonzero(sims >= threshold)
        keep = (cols > rows + start) & (key_of[rows + start] != key_of[cols])
        rows, cols = rows[keep], cols[keep]
        cosines = sims[rows, cols].tolist()
        for row, col, cosine in zip(rows.tolist(), cols.tolist(), cosines, strict=True):
            one, other = with_vector[start + row], with_vector[col]
            if judge.same_fact(members[one], members[other], cosine):
                join(one, other)
    return neighbours


def current_vectors(
    store: Store, models: Sequence[str], members: list[MemoryRecord]
) -> dict[int, np.ndarray]:
    """{id: unit vector} of the members whose stored vector is of their current text, when the
    store holds one embedding model (`models`; with several, none is comparable with all)."""
    if len(models) != 1 or not members:
        return {}
    ids, hashes, matrix = store.read(vectors_of, models[0], [c.id for c in members])
    by_id = {c.id: c for c in members}
    found: dict[int, np.ndarray] = {}
    for ident, digest, vector in zip(ids.tolist(), hashes, matrix, strict=True):
        record = by_id[int(ident)]
        if digest != content_hash(embedding_text(record.title, record.content, record.keywords)):
            continue  # embedded before its last edit: as good as none
        norm = float(np.linalg.norm(vector))
        found[int(ident)] = vector / norm if norm > 0 else vector
    return found


def merged_fields(
    group: Sequence[MemoryRecord], now: float | None = None, params: MaintenanceParams | None = None
) -> dict[str, Any]:
    """The merged memory: the best-supported member's words (title, content, keywords, type,
    tier, decay policy), max importance, summed retrievals, earliest creation, latest access.

    With `now`, its confidence is the one a decay run at `now` would leave it with (and the
    cleanup flag it would get), so the merged memory is no work for the next run."""
    leader = min(group, key=support)
    ordered = sorted(group, key=lambda c: (c.created_at, c.id))
    accesses = [c.last_accessed_at for c in group if c.last_accessed_at is not None]
    base = max(c.base_confidence for c in group)
    fields: dict[str, Any] = {
        "owner": leader.owner,
        "topic": leader.topic,
        "tier": leader.tier,
        "memory_type": leader.memory_type,
        "title": leader.title,
        "content": leader.content,
        "keywords": list(leader.keywords),
        "source": "consolidation",
        "importance": max(c.importance for c in group),
        "confidence": max(c.confidence for c in group),
        "base_confidence": base,
        "retrieval_count": sum(c.retrieval_count for c in group),
        # An episode happened when its best-supported telling says: the window that joined
        # the group is measured from it, so the merged memory stays where its group was.
        "created_at": leader.created_at if any(map(episodic, group)) else ordered[0].created_at,
        "last_accessed_at": max(accesses) if accesses else None,
        "decay_policy": leader.decay_policy,
        "metadata": {"consolidated_from": [c.id for c in ordered]},
    }
    if now is not None and params is not None:
        settle(fields, now, params)
    return fields


def settle(fields: dict[str, Any], now: float, params: MaintenanceParams) -> None:
    """Give a merged memory the confidence and flag the store's policy gives it at `now`."""
    policy = params.decay
    if not isinstance(policy, RelevanceParams | PeriodicParams | ExponentialParams):
        return

    def one(name: str) -> np.ndarray:
        return np.array([fields[name]])

    last = np.array([np.nan if fields["last_accessed_at"] is None else fields["last_accessed_at"]])
    decays = decays_mask(
        np.array(["active"]), one("decay_policy"), np.array([False]), one("memory_type"), policy
    )
    at_now = confidence_at(
        now,
        one("confidence"),
        one("base_confidence"),
        one("retrieval_count"),
        last,
        one("created_at"),
        one("decay_policy") == "aggressive",
        decays,
        policy,
    )
    fields["confidence"] = min(fields["confidence"], float(at_now[0]))
    if isinstance(policy, RelevanceParams):
        eligible = relevance_eligible(
            np.array(["active"]), one("decay_policy"), np.array([False]), one("memory_type")
        )
        if cleanup_flags(one("confidence"), one("created_at"), now, eligible, policy)[0]:
            fields["decay_policy"] = "pending_deletion"


def extractive_merge(group: Sequence[MemoryRecord]) -> dict[str, Any]:
    """The merged memory of `group` without a time to settle its confidence at (review)."""
    return merged_fields(group)


@dataclass(frozen=True)
class ScopeGroups:
    """The merge groups of one owner and topic, told as planning finds them (scope `number`
    of `total`), so that a review can show them before the whole plan is made."""

    owner: str
    topic: str
    number: int
    total: int
    groups: list[list[MemoryRecord]]


def find_groups(frame: Frame, p: ConsolidateParams) -> tuple[list[list[MemoryRecord]], int, int]:
    """Groups of near-duplicates per owner and topic, read and planned one scope at a time
    (each told to `frame.partial` as it is found); with how many candidates there were and
    how many of them had no vector."""
    store = frame.store
    assert store is not None
    # Until a pass has changed the frame, its rows hold the stored values that each scope's
    # records carry too (a plan with consolidate loads its whole scope, never narrowed): the
    # rule is asked of the records, and the frame (a full read of the scope's rows) is left
    # unread until the plan is recorded, after the last scope.
    fresh = not frame.changed and frame.rows.narrow is None
    open_ids = None if fresh else set(frame.ids[frame.maintainable()].tolist())
    models = store.read(stored_models)
    scopes = store.read(candidate_scopes, frame.scope)
    judge = PairJudge(p.min_cosine)
    groups: list[list[MemoryRecord]] = []
    candidates = without_vector = 0
    for number, (owner, topic) in enumerate(scopes, start=1):
        records = store.read(scope_candidates, frame.scope, owner, topic)
        if open_ids is None:
            keep = maintainable(
                [r.status for r in records],
                [r.decay_policy for r in records],
                [r.is_protected for r in records],
            ).tolist()
            members = [record for record, kept in zip(records, keep, strict=True) if kept]
        else:
            members = [record for record in records if record.id in open_ids]
        found: list[list[MemoryRecord]] = []
        if members:
            vectors = current_vectors(store, models, members)
            candidates += len(members)
            without_vector += sum(1 for record in members if record.id not in vectors)
            if len(members) >= 2:
                neighbours = scope_neighbours(members, vectors, p.min_cosine, judge)
                found = [[members[i] for i in group] for group in star_groups(members, neighbours)]
        groups.extend(found)
        if frame.partial is not None:
            frame.partial(ScopeGroups(owner, topic, number, len(scopes), found))
    return groups, candidates, without_vector


def missing_vector_warning(figures: dict[str, int]) -> str | None:
    """The plan's warning when memories lacked a vector (only exact duplicates among them were
    considered), from consolidate's figures; None when every candidate had one."""
    missing, total = figures.get("without_vector", 0), figures.get("candidates", 0)
    if not missing:
        return None
    return (
        f"consolidation: {missing:,} of {total:,} memories have no vector yet; only exact "
        "duplicates among them were considered; run `memory-console reindex`"
    )


def merge_changes(
    groups: Sequence[Sequence[MemoryRecord]],
    p: ConsolidateParams,
    now: float,
    settled: MaintenanceParams | None,
    first: int = 1,
) -> tuple[list[NewMemory], ChangeSet | None]:
    """The merged memories of `groups` (keys -first, -first - 1 ... in their order) and the
    change that marks their members consolidated into them (None without groups)."""
    new_memories: list[NewMemory] = []
    member_ids: list[int] = []
    into: list[int] = []
    reasons: list[Reason] = []
    for number, group in enumerate(groups, start=first):
        key = -number
        ids = sorted(c.id for c in group)
        measure = "same text" if len({text_key(c.content) for c in group}) == 1 else "cosine"
        why = Reason.of(
            "merge_group",
            size=len(group),
            measure=measure,
            threshold=p.min_cosine,
            owner=group[0].owner,
            topic=group[0].topic,
        )
        fields = merged_fields(group, now, settled)
        new_memories.append(NewMemory(key, "consolidate", fields, why, kind="created"))
        member = Reason.of(
            "merged_into", others=len(ids) - 1, measure=measure, threshold=p.min_cosine
        )
        for ident in ids:
            member_ids.append(ident)
            into.append(key)
            reasons.append(member)
    if not member_ids:
        return new_memories, None
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
    return new_memories, change


def plan_consolidate(frame: Frame, params: MaintenanceParams, now: float) -> PassResult:
    if frame.store is None:
        raise ValueError("the consolidate pass reads memory texts: the frame needs its store")
    p = params.of(ConsolidateParams)
    groups, candidates, without_vector = find_groups(frame, p)
    settled = params if frame.store.settings().decay_enabled else None
    ordered = sorted(groups, key=lambda g: min(c.id for c in g))
    new_memories, change = merge_changes(ordered, p, now, settled)
    result = PassResult(
        new_memories=new_memories,
        figures={
            "groups": len(groups),
            "consolidated": sum(len(group) for group in groups),
            "merge_command_failures": 0,  # the merge command runs at review or apply
            "candidates": candidates,
            "without_vector": without_vector,
        },
    )
    if change is not None:
        frame.record(change)
        result.change_sets.append(change)
    return result


PASS = PassSpec(
    name="consolidate",
    plan=plan_consolidate,
    summary="merge memories of one owner and topic that state the same fact again into one",
    order=25,
    scope="maintainable",
    params_class=ConsolidateParams,
)

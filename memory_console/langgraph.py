"""A LangGraph store over a memory-console store: `MemoryConsoleStore`.

    from langgraph.graph import StateGraph
    from memory_console.langgraph import MemoryConsoleStore

    store = MemoryConsoleStore.open("memories.db", graph="support-bot")
    graph = builder.compile(store=store)   # nodes read and write through config's store

See docs/ARCHITECTURE.md, "LangGraph's store". Needs the optional extra
`memory-console[langgraph]`. An item is one memory:

- its owner is the namespace's label at `owner_part` (the first by default), its namespace
  the other labels joined by "." (what the console's tree and filters show); the whole
  namespace and the key make its address, kept in the memory's `external_id`
  ("langgraph:" + the namespace as a JSON list + the key as a JSON string), which no other
  item shares;
- its `value` is kept whole in metadata.langgraph.value; the text to embed and search (the
  memory's content) is taken from the value as the index config's `fields` say (default: the
  whole value);
- every write is the store's own (events with actor "langgraph:GRAPH", the history of each
  edit); secrets are screened as the agent API screens them and a refused put raises
  `MemoryRefused`, naming why.

The operator wins: an item the console archived, forgot, superseded or purged is not returned
by `get` or `search`, and the agent's next `put` of its key makes a new memory; a protected
item is returned, and its `delete` raises `MemoryRefused`. `delete` archives (restorable).
TTL: an item's time to live counts from its last write, or from its last read when reads
refresh it (each such read is an access of the memory, as recall's); an expired item is not
returned, and `sweep_ttl()` archives the expired ones.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

try:
    from langgraph.store.base import BaseStore
except ImportError as missing:  # pragma: no cover - the extra is part of the test install
    raise ImportError(
        "memory_console.langgraph needs LangGraph: pip install 'memory-console[langgraph]'"
    ) from missing
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base import validate_op_namespace as _validate_op
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from memory_console.agent.decide import screen
from memory_console.agent.rules import describe
from memory_console.agent.rules.classify import classify_type
from memory_console.store import MemoryFilter, MemoryRecord, Store
from memory_console.timeutil import now_ts

PREFIX = "langgraph:"  # every address an item keeps in external_id begins so
ACTOR = "langgraph"  # the events' actor, "langgraph:GRAPH"
IMPORTANCE = 0.5  # what an item starts with, as an inferred memory of the agent API
SEARCH_POOL = 5_000  # at most this many ids of a namespace narrow a search exactly


class MemoryRefused(ValueError):
    """A write or delete the store refuses (a secret in the value, a protected item): `reason`
    says why, in the words the agent API and the MCP server use."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Address:
    """Where an item lives: its namespace and key, and the external_id that holds both."""

    namespace: tuple[str, ...]
    key: str

    @property
    def external_id(self) -> str:
        return namespace_prefix(self.namespace, exact=True) + json.dumps(self.key)

    @classmethod
    def parse(cls, external_id: str) -> Address | None:
        """The address an external_id holds, or None when it is not one of ours."""
        if not external_id.startswith(PREFIX):
            return None
        try:
            namespace, end = json.JSONDecoder().raw_decode(external_id, len(PREFIX))
            key = json.loads(external_id[end:])
        except ValueError:
            return None
        if not isinstance(namespace, list) or not isinstance(key, str):
            return None
        return cls(tuple(str(label) for label in namespace), key)


def namespace_prefix(namespace: Sequence[str], *, exact: bool) -> str:
    """The beginning every external_id of a namespace shares: of the namespace itself
    (exact=True), or of it and every namespace below it."""
    listed = json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))
    return PREFIX + (listed if exact else listed[:-1] + ("," if namespace else ""))


class MemoryConsoleStore(BaseStore):
    """LangGraph's BaseStore over a memory-console Store (see the module's docstring).

    store: an open Store (its actor names the events) or a path or URL, opened with actor
    "langgraph:GRAPH" and closed by close(). owner_part: which namespace label names the
    owner. index: LangGraph's index config; only `fields` is read (the embedding is the
    store's own local model; a put's index=False still stores the item's text, which search
    finds). ttl: LangGraph's TTL config (default_ttl in minutes, refresh_on_read). semantic:
    False keeps search to keywords; embedder: an already loaded Embedder to share."""

    supports_ttl = True

    def __init__(
        self,
        store: Store | str | os.PathLike[str],
        *,
        graph: str = "graph",
        owner_part: int = 0,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        semantic: bool = True,
        embedder: Any = None,
    ) -> None:
        if owner_part < 0:
            raise ValueError("owner_part must be >= 0")
        self.graph = graph
        self.actor = f"{ACTOR}:{graph}"
        self._owns = not isinstance(store, Store)
        self.store = store if isinstance(store, Store) else Store(store, actor=self.actor)
        self.owner_part = owner_part
        self.index_config = index
        fields = list((index or {}).get("fields") or ["$"])
        self._fields = [(field, tokenize_path(field)) for field in fields]
        self.ttl_config = ttl
        self._semantic_wanted = semantic
        self._embedder = embedder  # an already loaded Embedder to share (else loaded here)
        self._engine: Any = None
        # Items written since the last search, whose vectors the next search computes in one
        # batch: a put does not wait for the embedder (store changes of kind, ids).
        self._unembedded: list[tuple[str, int]] = []

    @classmethod
    def open(cls, target: str | os.PathLike[str], **options: Any) -> MemoryConsoleStore:
        """The store at a path (SQLite) or postgresql:// URL, opened for this adapter."""
        return cls(target, **options)

    def __enter__(self) -> MemoryConsoleStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        from memory_console.embed.search import stop_following

        stop_following(self.store, self._engine)
        if self._owns:
            self.store.close()

    @property
    def engine(self) -> Any:
        """The search engine, with semantic search once the embedder loads (first use); a
        missing model leaves keyword search, as the agent API does."""
        if self._engine is None:
            from memory_console.embed.search import agent_engine

            self._engine, _ = agent_engine(
                self.store, semantic=self._semantic_wanted, embedder=self._embedder
            )
        return self._engine

    # -- BaseStore ----------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Carry out the ops in order; puts to the same address in one batch keep the last."""
        ops = list(ops)
        for op in ops:
            _validate_op(op)
        last_put = {(op.namespace, op.key): n for n, op in enumerate(ops) if isinstance(op, PutOp)}
        results: list[Result] = []
        for number, op in enumerate(ops):
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                if last_put[(op.namespace, op.key)] == number:
                    self._put(op)
                results.append(None)
            else:
                raise TypeError(f"unknown operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """batch() in a worker thread: the store's calls block."""
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, list(ops))

    # -- the operations -----------------------------------------------------------------------

    def _active(self, address: Address) -> MemoryRecord | None:
        """The active memory an address names (the newest, should there be more)."""
        found = self.store.active_by_external_id(address.external_id)
        records = self.store.get_many(found)
        live = [records[i] for i in found if i in records]
        return max(live, key=lambda r: (r.updated_at, r.id)) if live else None

    def _get(self, op: GetOp) -> Item | None:
        now = now_ts()
        record = self._active(Address(tuple(op.namespace), op.key))
        if record is None or self._expired(record, now):
            return None
        if self._refresh(op.refresh_ttl, record):
            self.store.record_access([record.id], now=now, query=f"get {op.key}")
        return _item(record)

    def _put(self, op: PutOp) -> None:
        address = Address(tuple(op.namespace), op.key)
        now = now_ts()
        current = self._active(address)
        if op.value is None:
            if current is not None:
                self._delete(current, now)
            return
        text = self._text(op.value, op.index)
        value_text = json.dumps(op.value, ensure_ascii=False, default=str)
        refused = screen(f"{text}\n{value_text}", {}, user_requested=False)
        if refused is not None:
            raise MemoryRefused(f"not stored: {refused}")
        metadata = {
            "langgraph": {
                "namespace": list(address.namespace),
                "key": address.key,
                "value": op.value,
                "graph": self.graph,
                **self._ttl_fields(op.ttl),
            }
        }
        fields = {
            "title": describe.make_title(text),
            "content": text,
            "keywords": describe.extract_keywords(text),
            "metadata": metadata,
        }
        if current is not None:
            changed = {k: v for k, v in fields.items() if getattr(current, k) != v}
            if changed:
                self._unembedded_write(
                    "edited", lambda: _edit(self.store, current.id, changed, now)
                )
            return
        self._unembedded_write("added", lambda: self._add(fields, address, text, now))

    def _unembedded_write(self, kind: str, write: Callable[[], int]) -> None:
        """A write whose vector waits for the next search (see _embed_pending)."""
        semantic = self._engine.semantic if self._engine is not None else None
        listener = semantic.on_change if semantic is not None else None
        if listener is None or listener not in self.store.listeners:
            write()  # no index loaded yet: it embeds what lacks a vector when it loads
            return
        self.store.listeners.remove(listener)
        try:
            ident = write()
        finally:
            self.store.listeners.append(listener)
        self._unembedded.append((kind, ident))

    def _query_vector(self) -> Callable[[str], Any]:
        """How a search embeds its query: at its first call (made while the keyword half
        runs beside it), with what was put since the last search in the same batches; the
        vector is kept for the search's later passes."""
        self.engine  # noqa: B018 - loaded before the pending items are embedded
        kept: list[Any] = []

        def embed(text: str) -> Any:
            if not kept:
                vector = self._embed_pending(text)
                if vector is None:
                    vector = self.engine.semantic.embedder.embed_query(text)
                kept.append(vector)
            return kept[0]

        return embed

    def _embed_pending(self, query: str) -> Any:
        """Embed the items written since the last search and the query in the same batches
        (one model run); the query's vector, or None when there is no semantic index."""
        pending, self._unembedded = self._unembedded, []
        semantic = self._engine.semantic if self._engine is not None else None
        if semantic is None:
            return None
        changes = [
            (kind, sorted({ident for done, ident in pending if done == kind}))
            for kind in ("added", "edited")
        ]
        return semantic.catch_up([(kind, ids) for kind, ids in changes if ids], query)

    def _add(self, fields: dict[str, Any], address: Address, text: str, now: float) -> int:
        return self.store.add(
            {
                **fields,
                "owner": self._owner(address.namespace),
                "namespace": self._namespace(address.namespace),
                "topic": describe.infer_topic(text),
                "tier": "long_term",
                "memory_type": classify_type(text)[0],
                "source": "import",
                "importance": IMPORTANCE,
                "confidence": IMPORTANCE,
                "external_id": address.external_id,
            },
            now=now,
        )

    def _delete(self, record: MemoryRecord, now: float) -> None:
        if record.is_protected:
            raise MemoryRefused(f"memory {record.id} is protected: not archived")
        self.store.forget([record.id], f"deleted by {self.actor}", now=now)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        now = now_ts()
        prefix = tuple(op.namespace_prefix)
        wanted = op.offset + op.limit
        if op.query:
            hits = self._query_hits(prefix, op.query, op.filter, wanted, now)
        else:
            hits = [(r, None) for r in self._listed(prefix, op.filter, wanted, now)]
        page = hits[op.offset : op.offset + op.limit]
        refreshed = [r.id for r, _ in page if self._refresh(op.refresh_ttl, r)]
        if refreshed:
            self.store.record_access(refreshed, now=now, query=op.query or "search")
        return [_item(record, score, search=True) for record, score in page]

    def _query_hits(
        self,
        prefix: tuple[str, ...],
        query: str,
        value_filter: dict[str, Any] | None,
        wanted: int,
        now: float,
    ) -> list[tuple[MemoryRecord, float | None]]:
        """The best items under `prefix` for `query` by the hybrid search, best first.

        With the owner in the prefix, the search runs among the owner's memories (a label of
        the vector index, a column of the keyword index) and each half's candidates are
        narrowed to the prefix before they are fused, so the ranking is the prefix's own;
        when that leaves too few, or the owner is not in the prefix, it runs among the
        prefix's memories by id (up to SEARCH_POOL), else among all, read until enough."""
        vector = self._query_vector()
        depth = max(wanted * 4, 40)
        if prefix and self.owner_part < len(prefix):
            owner = MemoryFilter(status="active", owner=prefix[self.owner_part])
            found, exhausted = self._hits_within(
                owner, prefix, (query, vector), value_filter, depth, now, narrowed=True
            )
            if exhausted or len(found) >= wanted:
                return found
        scope = MemoryFilter(status="active")
        pool = _ids_under(self.store, prefix, SEARCH_POOL + 1)
        if len(pool) <= SEARCH_POOL:
            if not pool:
                return []
            scope = MemoryFilter(status="active", ids=tuple(sorted(set(pool))))
        while True:
            found, exhausted = self._hits_within(
                scope, prefix, (query, vector), value_filter, depth, now, narrowed=False
            )
            if exhausted or len(found) >= wanted or depth >= 10_000:
                return found
            depth *= 4

    def _hits_within(
        self,
        scope: MemoryFilter,
        prefix: tuple[str, ...],
        query: tuple[str, Callable[[str], Any]],
        value_filter: dict[str, Any] | None,
        depth: int,
        now: float,
        *,
        narrowed: bool,
    ) -> tuple[list[tuple[MemoryRecord, float | None]], bool]:
        """The items under `prefix` among the search's `depth` best within `scope` (narrowed:
        each half's candidates kept to the prefix before fusion), and whether the search
        found all there are (fewer than `depth`, none of them narrowed away)."""
        exact, below = (namespace_prefix(prefix, exact=flag) for flag in (True, False))
        removed = False

        def under_prefix(ids: set[int]) -> set[int]:
            nonlocal removed
            addresses = self.store.external_ids_of(ids)
            kept = {
                ident
                for ident, external_id in addresses.items()
                if external_id is not None and external_id.startswith((exact, below))
            }
            removed = removed or len(kept) < len(ids)
            return kept

        text, embed = query
        hits = self.engine.search(
            text,
            k=depth,
            memory_filter=scope,
            now=now,
            narrow=under_prefix if narrowed else None,
            embed=embed,
        )
        found: list[tuple[MemoryRecord, float | None]] = []
        for hit in hits:
            record = hit.record
            if not self._mine(record, prefix) or self._expired(record, now):
                continue
            if value_filter and not matches(_value(record), value_filter):
                continue
            found.append((record, _score(hit)))
        return found, len(hits) < depth and not removed

    def _listed(
        self, prefix: tuple[str, ...], value_filter: dict[str, Any] | None, wanted: int, now: float
    ) -> list[MemoryRecord]:
        """The items under `prefix` (and passing the filter), most recently updated first:
        their ids and times from the external_id index, the records read a chunk at a time
        until enough pass."""
        dated = [
            pair
            for flag in (True, False)
            for pair in self.store.active_external_prefix_updated(
                namespace_prefix(prefix, exact=flag)
            )
        ]
        ordered = [ident for ident, _ in sorted(dated, key=lambda p: (-p[1], -p[0]))]
        kept: list[MemoryRecord] = []
        start, chunk = 0, max(wanted * 2, 20)
        while start < len(ordered):
            ids = ordered[start : start + chunk]
            start += chunk
            records = self.store.get_many(ids)
            for ident in ids:
                record = records.get(ident)
                if record is None or self._expired(record, now):
                    continue
                if value_filter and not matches(_value(record), value_filter):
                    continue
                kept.append(record)
                if len(kept) >= wanted:
                    return kept
            chunk *= 2
        return kept

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = (Address.parse(e) for _, e in self.store.active_external_prefix(PREFIX))
        namespaces = sorted({a.namespace for a in found if a is not None})
        if op.match_conditions:
            namespaces = [
                ns for ns in namespaces if all(_matches(c, ns) for c in op.match_conditions)
            ]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        return namespaces[op.offset : op.offset + op.limit]

    # -- TTL ----------------------------------------------------------------------------------

    def _ttl_fields(self, ttl: float | None | Any) -> dict[str, Any]:
        minutes = ttl if isinstance(ttl, (int, float)) else None
        if ttl is not None and not isinstance(ttl, (int, float)):  # NOT_PROVIDED
            minutes = (self.ttl_config or {}).get("default_ttl")
        if minutes is None:
            return {}
        if not math.isfinite(float(minutes)) or float(minutes) <= 0:
            raise ValueError("ttl must be a positive number of minutes")
        return {"ttl_minutes": float(minutes)}

    def _expired(self, record: MemoryRecord, now: float) -> bool:
        minutes = (record.metadata.get("langgraph") or {}).get("ttl_minutes")
        if not isinstance(minutes, (int, float)):
            return False
        since = max(record.updated_at, record.last_accessed_at or 0.0)
        return now >= since + float(minutes) * 60.0

    def _refresh(self, asked: bool | None, record: MemoryRecord) -> bool:
        """Whether a read refreshes this item's TTL (and so is an access of the memory)."""
        if "ttl_minutes" not in (record.metadata.get("langgraph") or {}):
            return False
        if asked is not None:
            return asked
        return bool((self.ttl_config or {}).get("refresh_on_read", True))

    def sweep_ttl(self) -> int:
        """Archive every item whose time to live has run out; returns how many."""
        now = now_ts()
        expired = [
            record.id
            for chunk in _chunks([i for i, _ in self.store.active_external_prefix(PREFIX)], 500)
            for record in self.store.get_many(chunk).values()
            if record.status == "active" and self._expired(record, now)
        ]
        if expired:
            self.store.forget(expired, f"time to live ran out ({self.actor})", now=now)
        return len(expired)

    # -- mapping ------------------------------------------------------------------------------

    def _owner(self, namespace: tuple[str, ...]) -> str:
        return namespace[self._owner_at(namespace)]

    def _owner_at(self, namespace: tuple[str, ...]) -> int:
        return min(self.owner_part, len(namespace) - 1)

    def _namespace(self, namespace: tuple[str, ...]) -> str | None:
        """The memory's namespace: the item's without the owner's label, joined by "."
        (LangGraph allows no "." in a label), or None when the owner's label is all of it."""
        owner_at = self._owner_at(namespace)
        rest = namespace[:owner_at] + namespace[owner_at + 1 :]
        return ".".join(rest) or None

    def _text(self, value: Mapping[str, Any], index: Any) -> str:
        """The text to embed and search: the value's fields the index names (the put's own
        list, else the store's), or the whole value."""
        fields = self._fields
        if isinstance(index, list):
            fields = [(field, tokenize_path(field)) for field in index]
        parts: list[str] = []
        for field, path in fields:
            if field == "$":
                parts.append(json.dumps(value, ensure_ascii=False, default=str))
            else:
                parts.extend(get_text_at_path(value, path))
        text = " ".join(part for part in parts if part.strip()).strip()
        return text or json.dumps(value, ensure_ascii=False, default=str)

    def _mine(self, record: MemoryRecord, prefix: tuple[str, ...]) -> bool:
        address = Address.parse(record.external_id or "")
        return address is not None and address.namespace[: len(prefix)] == prefix


def matches(value: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether an item's value passes a LangGraph filter: each key's value equal, or compared
    by the operators $eq, $ne, $gt, $gte, $lt, $lte (numbers), nested dicts key by key."""
    return all(_passes(value.get(key), condition) for key, condition in wanted.items())


def _passes(actual: Any, condition: Any) -> bool:
    if isinstance(condition, dict):
        operators = {k: v for k, v in condition.items() if k.startswith("$")}
        if operators:
            return all(_operator(actual, name, bound) for name, bound in operators.items())
        return isinstance(actual, dict) and matches(actual, condition)
    return bool(actual == condition)


def _operator(actual: Any, name: str, bound: Any) -> bool:
    if name == "$eq":
        return bool(actual == bound)
    if name == "$ne":
        return bool(actual != bound)
    try:
        left, right = float(actual), float(bound)
    except (TypeError, ValueError):
        return False
    comparisons = {"$gt": left > right, "$gte": left >= right, "$lt": left < right}
    comparisons["$lte"] = left <= right
    if name not in comparisons:
        raise ValueError(f"unknown filter operator {name}")
    return comparisons[name]


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A list_namespaces condition: a prefix or suffix of labels, "*" matching any one."""
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))


def _value(record: MemoryRecord) -> dict[str, Any]:
    value = (record.metadata.get("langgraph") or {}).get("value")
    return value if isinstance(value, dict) else {}


def _score(hit: Any) -> float:
    """The score a search hit is ordered by (hybrid: the fused rank score, 1.0 at the top)."""
    return round(float(hit.score), 6)


def _item(record: MemoryRecord, score: float | None = None, *, search: bool = False) -> Any:
    """The LangGraph item a memory is (a SearchItem with its score from a search)."""
    address = Address.parse(record.external_id or "")
    assert address is not None
    created = datetime.fromtimestamp(record.created_at, UTC)
    updated = datetime.fromtimestamp(record.updated_at, UTC)
    value = _value(record)
    if score is not None or search:
        return SearchItem(address.namespace, address.key, value, created, updated, score)
    return Item(
        value=value,
        key=address.key,
        namespace=address.namespace,
        created_at=created,
        updated_at=updated,
    )


def _edit(store: Store, ident: int, changed: dict[str, Any], now: float) -> int:
    store.edit(ident, changed, now=now)
    return ident


def _chunks(items: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _ids_under(store: Store, prefix: tuple[str, ...], limit: int | None) -> list[int]:
    """The active memories in the namespace `prefix` or below it (about `limit` at most)."""
    ids = [i for i, _ in store.active_external_prefix(namespace_prefix(prefix, exact=True), limit)]
    below = store.active_external_prefix(namespace_prefix(prefix, exact=False), limit)
    return ids + [i for i, _ in below]

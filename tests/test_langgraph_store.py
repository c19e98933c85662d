"""MemoryConsoleStore is a LangGraph store (memory_console/langgraph.py), on both backends:
what LangGraph's own stores promise (namespaces, list_namespaces, paging, filters, vector
search order, TTL, batches), a real graph and LangMem's tools writing through it, and the
operator's word over the agent's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from memory_console.embed.embedder import Embedder
from memory_console.langgraph import Address, MemoryConsoleStore, MemoryRefused
from memory_console.store import MemoryFilter, Store

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def lg(db: str, embedder: Embedder) -> Iterator[MemoryConsoleStore]:
    with MemoryConsoleStore.open(
        db, graph="test-graph", index={"fields": ["text"]}, embedder=embedder
    ) as opened:
        yield opened


def fill(store: MemoryConsoleStore, namespaces: list[tuple[str, ...]]) -> None:
    store.batch(
        [PutOp(ns, f"id_{n}", {"text": f"value {n:02d}"}) for n, ns in enumerate(namespaces)]
    )


def test_put_get_edit_and_delete_are_the_stores_own_writes(lg: MemoryConsoleStore) -> None:
    ns = ("users", "alice", "memories")
    lg.put(ns, "seat", {"text": "Prefers aisle seats on long flights", "n": 1})
    item = lg.get(ns, "seat")
    assert item is not None and item.value == {
        "text": "Prefers aisle seats on long flights",
        "n": 1,
    }
    assert (item.namespace, item.key) == (ns, "seat")
    lg.put(ns, "seat", {"text": "Prefers window seats now", "n": 2})
    again = lg.get(ns, "seat")
    assert again is not None and again.value["n"] == 2 and again.created_at == item.created_at
    (record,) = lg.store.iter_memories(MemoryFilter())
    assert record.owner == "users" and record.content == "Prefers window seats now"
    assert Address.parse(record.external_id or "") == Address(ns, "seat")
    kinds = [(e.kind, e.actor) for e in lg.store.history(record.id)]
    assert kinds == [("created", "langgraph:test-graph"), ("edited", "langgraph:test-graph")]
    lg.delete(ns, "seat")
    assert lg.get(ns, "seat") is None
    assert lg.store.require(record.id).status == "archived"  # recoverable
    assert lg.get(("users", "alice"), "seat") is None and lg.get(ns, "other") is None


def test_the_owner_is_the_namespace_label_the_operator_chooses(db: str, embedder: Embedder) -> None:
    with MemoryConsoleStore.open(db, owner_part=1, embedder=embedder, semantic=False) as lg:
        lg.put(("users", "alice", "memories"), "k", {"text": "x"})
        lg.put(("solo",), "k", {"text": "y"})
        owners = sorted(r.owner for r in lg.store.iter_memories(MemoryFilter()))
    assert owners == ["alice", "solo"]


def test_namespaces_are_validated_as_langgraph_validates_them(lg: MemoryConsoleStore) -> None:
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            lg.put(bad, "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        lg.batch([PutOp(("a.b",), "k", {"text": "x"})])  # past the public method too
    lg.put(("foo", "langgraph", "foo"), "bar", {"text": "x"})
    assert lg.get(("foo", "langgraph", "foo"), "bar") is not None


def test_list_namespaces_by_prefix_suffix_wildcards_depth_and_page(
    lg: MemoryConsoleStore,
) -> None:
    fill(
        lg,
        [
            ("a", "b", "c"),
            ("a", "b", "d", "e"),
            ("a", "b", "d", "i"),
            ("a", "b", "f"),
            ("a", "c", "f"),
            ("b", "a", "f"),
            ("users", "123"),
            ("users", "456", "settings"),
            ("admin", "users", "789"),
        ],
    )
    assert lg.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert lg.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert lg.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert lg.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert lg.list_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert lg.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert lg.list_namespaces(prefix=("nonexistent",)) == []
    assert lg.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert lg.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert lg.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]


def test_search_pages_and_filters_with_langgraphs_operators(lg: MemoryConsoleStore) -> None:
    ns = ("shop", "items")
    lg.batch(
        [
            PutOp(
                ns,
                f"k{n}",
                {"text": f"item {n}", "price": n * 10, "tag": "odd" if n % 2 else "even"},
            )
            for n in range(1, 7)
        ]
    )
    lg.put(("shop",), "top", {"text": "not in items", "price": 999, "tag": "odd"})

    def keys(**kwargs: Any) -> list[str]:
        return sorted(item.key for item in lg.search(ns, **kwargs))

    assert keys(filter={"tag": "odd"}) == ["k1", "k3", "k5"]
    assert keys(filter={"price": {"$gt": 30}}) == ["k4", "k5", "k6"]
    assert keys(filter={"price": {"$gte": 30, "$lt": 50}}) == ["k3", "k4"]
    assert keys(filter={"price": {"$lte": 20}}) == ["k1", "k2"]
    assert keys(filter={"tag": {"$ne": "odd"}}) == ["k2", "k4", "k6"]
    assert keys(filter={"tag": {"$eq": "even"}, "price": 40}) == ["k4"]
    every = [item.key for item in lg.search(ns, limit=10)]
    assert sorted(every) == [f"k{n}" for n in range(1, 7)]
    pages = [item.key for o in (0, 2, 4) for item in lg.search(ns, limit=2, offset=o)]
    assert pages == every  # pages walk the same order, once each
    assert sorted(i.key for i in lg.search(("shop",), filter={"tag": "odd"})) == [
        "k1",
        "k3",
        "k5",
        "top",
    ]


def test_search_with_a_query_ranks_by_meaning_with_scores(lg: MemoryConsoleStore) -> None:
    ns = ("docs",)
    lg.batch(
        [
            PutOp(ns, "seat", {"text": "The user prefers aisle seats on long flights"}),
            PutOp(ns, "tea", {"text": "The user drinks green tea every morning"}),
            PutOp(ns, "code", {"text": "The project uses pytest for its tests"}),
            PutOp(("elsewhere",), "seat", {"text": "The user prefers aisle seats on long flights"}),
        ]
    )
    found = lg.search(ns, query="which seat does she like on a plane?", limit=3)
    assert [item.key for item in found][0] == "seat"
    assert all(item.namespace == ns for item in found)
    scores = [item.score for item in found]
    assert all(isinstance(s, float) for s in scores) and scores == sorted(scores, reverse=True)
    assert [i.key for i in lg.search(ns, query="morning drink", limit=1)] == ["tea"]


def test_the_text_searched_is_taken_from_the_index_fields(db: str, embedder: Embedder) -> None:
    with MemoryConsoleStore.open(db, index={"fields": ["about.summary"]}, embedder=embedder) as lg:
        lg.put(("n",), "k", {"about": {"summary": "Loves hiking in the Alps"}, "noise": "zzz"})
        lg.put(("n",), "j", {"text": "no summary here"}, index=["text"])
        contents = sorted(r.content for r in lg.store.iter_memories(MemoryFilter()))
    assert contents == ["Loves hiking in the Alps", "no summary here"]


def test_ttl_counts_from_the_last_write_or_refreshing_read(db: str, embedder: Embedder) -> None:
    ttl = {"default_ttl": 0.02, "refresh_on_read": True}  # 1.2 s
    index = {"fields": ["text"]}
    with MemoryConsoleStore.open(db, ttl=ttl, index=index, embedder=embedder, semantic=False) as lg:
        assert lg.supports_ttl
        lg.put(("t",), "short", {"text": "short lived"})
        lg.put(("t",), "kept", {"text": "no ttl"}, ttl=None)
        lg.put(("t",), "read", {"text": "read often"})
        for _ in range(3):
            time.sleep(0.5)
            assert lg.get(("t",), "read") is not None  # each read refreshes
        assert lg.get(("t",), "short", refresh_ttl=False) is None  # expired: not returned
        assert lg.get(("t",), "kept") is not None
        assert [i.key for i in lg.search(("t",), refresh_ttl=False)] == ["read", "kept"]
        time.sleep(1.3)
        assert lg.sweep_ttl() == 2
        left = {r.content for r in lg.store.iter_memories(MemoryFilter(status="active"))}
        assert left == {"no ttl"}


def test_a_batch_keeps_its_order_and_the_last_put_of_a_key(lg: MemoryConsoleStore) -> None:
    results = lg.batch(
        [
            PutOp(("b",), "k", {"text": "first"}),
            GetOp(("b",), "k"),
            PutOp(("b",), "k", {"text": "second"}),
            SearchOp(("b",), None, 10, 0),
        ]
    )
    assert results[0] is None and results[2] is None
    assert lg.get(("b",), "k").value == {"text": "second"}  # type: ignore[union-attr]
    assert len(lg.store.history(1)) == 1  # one write: the last put of the batch

    async def together() -> list[Any]:
        await asyncio.gather(
            lg.aput(("b",), "x", {"text": "one"}), lg.aput(("b",), "y", {"text": "two"})
        )
        return await asyncio.gather(
            lg.aget(("b",), "x"), lg.aget(("b",), "x"), lg.asearch(("b",), filter={"text": "two"})
        )

    first, second, found = asyncio.run(together())
    assert first == second and first.value == {"text": "one"}
    assert [i.key for i in found] == ["y"]
    assert asyncio.run(lg.alist_namespaces()) == [("b",)]


def test_the_operator_wins(lg: MemoryConsoleStore) -> None:
    ns = ("users", "alice")
    lg.batch([PutOp(ns, k, {"text": f"fact {k}"}) for k in ("gone", "guarded", "erased")])
    ids = {Address.parse(r.external_id or "").key: r.id for r in lg.store.iter_memories()}  # type: ignore[union-attr]
    lg.store.archive([ids["gone"]])
    lg.store.protect([ids["guarded"]])
    assert lg.get(ns, "gone") is None
    assert "gone" not in [i.key for i in lg.search(ns)]
    assert lg.get(ns, "guarded") is not None
    with pytest.raises(MemoryRefused, match="protected"):
        lg.delete(ns, "guarded")
    assert lg.get(ns, "guarded") is not None
    lg.put(ns, "gone", {"text": "said again"})  # the agent's new write is a new memory
    assert lg.get(ns, "gone").value == {"text": "said again"}  # type: ignore[union-attr]
    assert lg.store.require(ids["gone"]).status == "archived"


def test_a_secret_is_refused_with_a_reason_a_caller_can_catch(lg: MemoryConsoleStore) -> None:
    with pytest.raises(MemoryRefused) as refused:
        lg.put(("u",), "k", {"text": "my password is hunter22"})
    assert "password" in refused.value.reason
    with pytest.raises(ValueError):  # MemoryRefused is a ValueError
        lg.put(("u",), "k", {"note": "ok", "token": "api key sk-live-4f9a8b7c6d5e4f3a2b1c0d9e"})
    assert lg.store.count() == 0


class State(TypedDict):
    user: str
    message: str
    recalled: list[str]


def test_a_langgraph_graph_keeps_its_memories_in_the_store(lg: MemoryConsoleStore) -> None:
    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph

    def remember(state: State) -> dict[str, Any]:
        get_store().put(
            ("users", state["user"]), f"m{len(state['message'])}", {"text": state["message"]}
        )
        return {}

    def recall(state: State) -> dict[str, Any]:
        hits = get_store().search(("users", state["user"]), query=state["message"], limit=2)
        return {"recalled": [hit.value["text"] for hit in hits]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=lg)
    graph.invoke(
        {"user": "alice", "message": "I prefer aisle seats on long flights", "recalled": []}
    )
    out = graph.invoke({"user": "alice", "message": "Which seat do I like?", "recalled": []})
    assert "I prefer aisle seats on long flights" in out["recalled"]
    actors = {e.actor for r in lg.store.iter_memories() for e in lg.store.history(r.id)}
    assert actors == {"langgraph:test-graph"}


def test_langmems_memory_tools_write_and_search_through_the_store(
    db: str, embedder: Embedder
) -> None:
    from langmem import create_manage_memory_tool, create_search_memory_tool

    with MemoryConsoleStore.open(
        db, graph="langmem", index={"fields": ["content"]}, embedder=embedder, owner_part=1
    ) as lg:
        namespace = ("memories", "{langgraph_user_id}")
        manage = create_manage_memory_tool(namespace=namespace, store=lg)
        search = create_search_memory_tool(namespace=namespace, store=lg)
        config = {"configurable": {"langgraph_user_id": "bob"}}
        said = manage.invoke(
            {"content": "Bob prefers green tea", "action": "create"}, config=config
        )
        assert said.startswith("created memory")
        found = search.invoke({"query": "what does bob drink?"}, config=config)
        assert "Bob prefers green tea" in str(found)
        (record,) = lg.store.iter_memories()
        assert (record.owner, record.content) == ("bob", "Bob prefers green tea")


def test_another_process_sees_what_the_adapter_wrote(db: str, embedder: Embedder) -> None:
    import subprocess
    import sys

    with MemoryConsoleStore.open(db, embedder=embedder, semantic=False) as lg:
        lg.put(("users", "zoe"), "k", {"text": "Zoe keeps bees"}, index=["text"])
    code = (
        "import sys\nfrom memory_console.langgraph import MemoryConsoleStore\n"
        "with MemoryConsoleStore.open(sys.argv[1], semantic=False) as lg:\n"
        "    print(lg.get(('users', 'zoe'), 'k').value['text'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, db], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "Zoe keeps bees"
    with Store(db) as store:
        assert [r.content for r in store.iter_memories()] == ["Zoe keeps bees"]


def test_what_is_put_after_a_search_is_embedded_by_the_next_one(lg: MemoryConsoleStore) -> None:
    """A put does not wait for the embedder; the next search embeds what was put since the
    last one, in one batch, before it reads (an edit's new text included)."""
    ns = ("users", "zed")
    lg.put(ns, "warm", {"text": "Zed keeps a sourdough starter"})
    assert [i.key for i in lg.search(ns, query="bread")] == ["warm"]
    lg.put(ns, "drink", {"text": "Zed drinks green tea every morning"})
    assert lg._unembedded  # waiting for the next search
    assert lg.search(ns, query="what does Zed drink?", limit=1)[0].key == "drink"
    lg.put(ns, "drink", {"text": "Zed drinks black coffee at night"})
    found = lg.search(ns, query="coffee late in the evening", limit=1)
    assert found[0].value == {"text": "Zed drinks black coffee at night"}
    assert not lg._unembedded


def test_a_search_narrowed_within_the_owner_ranks_as_the_prefix_alone(
    lg: MemoryConsoleStore,
) -> None:
    """With the owner in the prefix the search runs among the owner's memories and keeps
    each half's candidates under the prefix before fusing them: the same order and scores
    as a search among the prefix's memories by id. The owner's other namespace, crowded
    with better matches, takes nothing from it, and a prefix too small for the first pass
    is searched whole."""
    notes = ("sam", "notes")
    mine = ("sam", "memories")
    lg.batch(
        [
            PutOp(notes, f"n{n}", {"text": f"Coffee note {n}: coffee beans and a coffee grinder"})
            for n in range(120)
        ]
        + [
            PutOp(mine, "cup", {"text": "Sam takes one cup of coffee after lunch"}),
            PutOp(mine, "tea", {"text": "Sam drinks green tea every morning"}),
            PutOp(mine, "bike", {"text": "Sam rides a bike to work"}),
        ]
    )
    # owner_part beyond the prefix: the owner is not known, the search runs by the ids.
    by_ids = MemoryConsoleStore(
        lg.store, graph="test-graph", owner_part=9, index={"fields": ["text"]}
    )
    by_ids._engine = lg.engine
    for limit in (1, 2, 3):
        narrowed = lg.search(mine, query="coffee", limit=limit)
        whole = by_ids.search(mine, query="coffee", limit=limit)
        assert [i.key for i in narrowed] == [i.key for i in whole]
        assert [i.score for i in narrowed] == pytest.approx([i.score for i in whole])
        assert len(narrowed) == limit and narrowed[0].key == "cup"
        assert all(item.namespace == mine for item in narrowed)
    assert {i.namespace for i in lg.search(("sam",), query="coffee", limit=5)} == {notes}


def test_a_search_without_a_query_lists_the_newest_first(lg: MemoryConsoleStore) -> None:
    ns = ("ann", "memories")
    for n in range(30):
        lg.put(ns, f"k{n}", {"text": f"fact {n}", "kind": "fact" if n % 3 else "other"})
    lg.put(ns, "k4", {"text": "fact 4, edited", "kind": "fact"})
    listed = [i.key for i in lg.search(ns, filter={"kind": "fact"}, limit=25)]
    assert listed[0] == "k4" and len(listed) == 20 and len(set(listed)) == 20
    updated = [i.updated_at for i in lg.search(ns, limit=40)]
    assert updated == sorted(updated, reverse=True) and len(updated) == 30
    assert [i.key for i in lg.search(ns, filter={"kind": "other"}, limit=3, offset=9)] == ["k0"]


def test_the_console_counts_and_filters_by_namespace(
    lg: MemoryConsoleStore, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An item's namespace without its owner's label is the memory's namespace: the topics
    tree counts by it and --namespace selects it ('' the memories in none)."""
    import json

    from memory_console.cli import main

    lg.put(("alice", "memories"), "diet", {"text": "Vegetarian since 2019"})
    lg.put(("alice", "memories", "trips"), "lisbon", {"text": "Planning a trip to Lisbon"})
    lg.put(("alice",), "seat", {"text": "Prefers aisle seats"})
    lg.store.add({"owner": "alice", "content": "Her sister Joana is a nurse"})
    places: dict[tuple[str, str | None], int] = {}
    for row in lg.store.place_counts(MemoryFilter(status="active")):
        places[(row.owner, row.namespace)] = places.get((row.owner, row.namespace), 0) + row.count
    assert places == {("alice", None): 2, ("alice", "memories"): 1, ("alice", "memories.trips"): 1}
    for namespace, wanted in (("memories", ["diet"]), ("memories.trips", ["lisbon"])):
        capsys.readouterr()
        assert main(["list", "--db", db, "--namespace", namespace, "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        keys = [Address.parse(row["external_id"]).key for row in rows]  # type: ignore[union-attr]
        assert keys == wanted and {row["namespace"] for row in rows} == {namespace}
    capsys.readouterr()
    assert main(["list", "--db", db, "--namespace", "", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(row["content"] for row in rows) == [
        "Her sister Joana is a nurse",
        "Prefers aisle seats",
    ]

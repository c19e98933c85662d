"""PostgreSQL stores: the schema from the SQLModel tables, opening and refusing databases, and
the Store's reads answering as on SQLite (paging order, search, ids given by an import)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from memory_console.embed.embedder import Embedder
from memory_console.store import MemoryFilter, Store, StoreError
from memory_console.store.db import SCHEMA_VERSION
from memory_console.store.migrations import MIGRATIONS
from memory_console.store.postgres import FIRST_SCHEMA, placeholders, shown_url
from memory_console.store.postgres.migrations import POSTGRES_MIGRATIONS
from tests.helpers import DAY, NOW, memory, server_rows


def test_schema_is_the_sqlmodel_tables(pg_url: str) -> None:
    from memory_console.store import tables

    Store(pg_url).close()
    found = server_rows(
        pg_url,
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema()",
    )
    columns: dict[str, set[str]] = {}
    for table, column in found:
        columns.setdefault(str(table), set()).add(str(column))
    for table in tables.SQLModel.metadata.sorted_tables:
        assert {column.name for column in table.columns} <= columns[table.name], table.name
    # The parts only PostgreSQL has: the keyword index's table, pgvector's column and the
    # table of distinct vectors.
    assert columns["memory_search"] == {"memory_id", "search"}
    assert "embedding" in columns["embedding"] and "embedding" in columns["embedding_vector"]
    indexes = dict(server_rows(pg_url, "SELECT indexname, indexdef FROM pg_indexes"))
    assert "gin (search)" in indexes["ix_memory_search"]
    assert "ON public.embedding_vector USING hnsw" in indexes["ix_embedding_vector_hnsw"]
    assert "WHERE (superseded_by IS NOT NULL)" in indexes["ix_memory_superseded_by"]
    assert "ix_memory_status_confidence" in indexes and "ix_embedding_hnsw" not in indexes
    version = server_rows(pg_url, "SELECT value FROM console_meta WHERE key = 'schema_version'")
    assert version == [(str(SCHEMA_VERSION),)]


def test_every_version_since_the_first_postgresql_schema_migrates_both_backends() -> None:
    for version in range(FIRST_SCHEMA, SCHEMA_VERSION):
        assert version in MIGRATIONS and version in POSTGRES_MIGRATIONS, version


def test_foreign_newer_and_empty_read_only_databases_are_refused(pg_url: str) -> None:
    with pytest.raises(StoreError, match="read-only mode does not create"):
        Store(pg_url, read_only=True)
    with pytest.raises(StoreError, match="no store in this database"):
        Store(pg_url, create=False)
    Store(pg_url).close()
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE console_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer memory-console"):
        Store(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE console_meta")
    with pytest.raises(StoreError, match="another application"):
        Store(pg_url)


def test_read_only_store_refuses_writes_on_the_server(pg_url: str) -> None:
    with Store(pg_url) as store:
        store.add({"content": "kept"})
    with Store(pg_url, read_only=True) as store:
        assert store.count() == 1
        with pytest.raises(StoreError):
            store.add({"content": "refused"})
    assert server_rows(pg_url, "SELECT count(*) FROM memory") == [(1,)]


@pytest.mark.parametrize("descending", [False, True])
def test_a_first_page_is_read_in_an_index_order_on_postgresql(
    pg_url: str, descending: bool
) -> None:
    """Each query of a first page sorted by a column with NULLs reads an index in its order
    (no sort of the rows): an ORDER BY saying where NULLs go matched no index, and the
    console's first screen sorted every row of a million-memory store (0.45 s)."""
    import psycopg

    from memory_console.store.records import MEMORY_SELECT
    from memory_console.store.store import keyset_segments

    rows = [
        memory(f"fact {n}", days_old=30, last_accessed_at=None if n % 3 else NOW - n)
        for n in range(60)
    ]
    with Store(pg_url) as store:
        store.add_many(rows, now=NOW)
    with psycopg.connect(pg_url) as conn:
        conn.execute("ANALYZE memory")
        # A table this small is otherwise read whole and sorted whatever the indexes; with
        # sorting off, a Sort is left only where no index gives the order asked for.
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            conn.execute(f"SET {setting} = off")
        for condition, _, order in keyset_segments("last_accessed_at", descending, None):
            sql = f"SELECT {MEMORY_SELECT} FROM memory WHERE {condition} ORDER BY {order} LIMIT 51"
            plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {sql}").fetchall())
            sorts = [line for line in plan.splitlines() if line.strip().startswith("->  Sort")]
            assert "Index" in plan and not sorts, plan


@pytest.mark.parametrize("descending", [False, True])
def test_keyset_pages_follow_sqlite_order_with_nulls(
    pg_url: str, tmp_path: Path, descending: bool
) -> None:
    """Sorting by a column with NULLs pages through the same ids in the same order on both
    backends (SQLite puts NULLs first ascending; PostgreSQL is asked to)."""
    rows = [
        memory(
            f"fact {n}",
            days_old=30 + n % 7,
            last_accessed_at=None if n % 3 else NOW - (n % 5) * DAY,
        )
        for n in range(23)
    ]
    orders = []
    for target in (str(tmp_path / "s.db"), pg_url):
        with Store(target) as store:
            store.add_many(rows, now=NOW)
            seen, cursor = [], None
            while True:
                page = store.page(
                    sort="last_accessed_at", descending=descending, after=cursor, limit=4
                )
                seen += [record.id for record in page.rows]
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            orders.append(seen)
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(1, 24))


def test_keyword_search_and_text_filter_use_the_tsvector(pg_url: str) -> None:
    with Store(pg_url) as store:
        tea, coffee, both = store.add_many(
            [
                {"content": "Drinks green tea every afternoon", "owner": "ann"},
                {"content": "Hates coffee", "title": "coffee", "owner": "bob"},
                {"content": "Coffee at breakfast, tea after lunch", "owner": "ann"},
            ]
        )
        ranked = [ident for ident, _ in store.keyword_ranking("coffee and tea")]
        assert ranked[0] == both and set(ranked) == {tea, coffee, both}
        found = store.keyword_search("teas", MemoryFilter(owner="ann"))  # stemmed
        assert {record.id for record, _ in found} == {tea, both}
        assert store.count(MemoryFilter(text="coffee tea")) == 1
        store.edit(tea, {"title": "Mint", "content": "Switched to mint"})
        assert store.count(MemoryFilter(text="tea")) == 1  # the generated column followed


def test_ids_given_by_an_import_move_the_sequence_on(pg_url: str) -> None:
    with Store(pg_url) as store:
        assert store.add_many([{"id": 40, "content": "imported"}], keep_ids=True) == [40]
        assert store.add({"content": "new"}) == 41
        assert list(store.ids_matching(MemoryFilter())) == [40, 41]


def test_session_filter_reads_json_metadata(pg_url: str) -> None:
    with Store(pg_url) as store:
        mine, other, _ = store.add_many(
            [
                {"content": "a", "tier": "working", "metadata": {"session_id": "s1"}},
                {"content": "b", "tier": "working", "metadata": {"session_id": "s2"}},
                {"content": "c"},
            ]
        )
        kept = store.ids_matching(MemoryFilter(session_id="s1"))
        assert other not in kept and mine in kept and len(kept) == 2


def test_placeholders_leave_quoted_text_alone() -> None:
    assert placeholders("SELECT '?', \"a?\" FROM t WHERE x = ? AND y LIKE '5%'") == (
        "SELECT '?', \"a?\" FROM t WHERE x = %s AND y LIKE '5%%'"
    )
    assert placeholders("SELECT m::jsonb FROM t WHERE a = :name") == (
        "SELECT m::jsonb FROM t WHERE a = %(name)s"
    )


def test_messages_never_show_the_password() -> None:
    assert shown_url("postgresql://ann:secret@db:5432/mem") == "postgresql://ann@db:5432/mem"


def vector_store(url: str, sizes: dict[str, int]) -> tuple[Store, dict[int, np.ndarray]]:
    """A PostgreSQL store whose memories (so many per owner) have random unit vectors."""
    from memory_console.store import embeddings

    rng = np.random.default_rng(7)
    store = Store(url, actor="test")
    vectors: dict[int, np.ndarray] = {}
    for owner, size in sizes.items():
        ids = store.add_many([{"content": f"{owner} {n}", "owner": owner} for n in range(size)])
        matrix = rng.normal(size=(size, 384)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        vectors.update(zip(ids, matrix, strict=True))
        rows = [(ident, f"hash {ident}", vector.tobytes()) for ident, vector in vectors.items()]
        embeddings.write_vectors(store, "test-model", rows)
    return store, vectors


def test_vectors_are_ranked_in_the_database_exact_or_through_hnsw(pg_url: str) -> None:
    from memory_console.store.postgres import vectors as pg_vectors

    store, vectors = vector_store(pg_url, {"alice": 600, "bob": 20})
    query = vectors[5] + 0.5 * vectors[6]
    with store:
        for memory_filter in (MemoryFilter(status="active"), MemoryFilter(owner="bob")):
            kept = [i for i in vectors if memory_filter.owner in (None, store.require(i).owner)]
            cosines = {i: float(vectors[i] @ query) / float(np.linalg.norm(query)) for i in kept}
            truth = sorted(kept, key=lambda i: -cosines[i])[:10]
            for exact in (True, False, None):
                found = pg_vectors.nearest_in_database(
                    store, "test-model", query, memory_filter, 10, exact=exact
                )
                assert len(found) == 10
                if exact:
                    assert [ident for ident, _ in found] == truth
                    assert [c for _, c in found] == pytest.approx([cosines[i] for i in truth])
                else:
                    assert len({ident for ident, _ in found} & set(truth)) >= 9
        store.archive([truth[0]])
        found = pg_vectors.nearest_in_database(store, "test-model", query, MemoryFilter(), 10)
        assert truth[0] in {ident for ident, _ in found}  # no status asked: archived kept
        active = MemoryFilter(status="active")
        for exact in (True, False):
            found = pg_vectors.nearest_in_database(
                store, "test-model", query, active, 10, exact=exact
            )
            assert truth[0] not in {ident for ident, _ in found}


def test_an_exact_scan_is_chosen_for_a_filter_that_keeps_few_memories(pg_url: str) -> None:
    from memory_console.store.postgres import vectors as pg_vectors

    store, _ = vector_store(pg_url, {"alice": 600, "bob": 20})
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE memory")  # what autovacuum does after a load
    with store, store.lock:
        conn = store.connection
        # sqrt(200 * 620) is 352: bob's 20 memories are ranked exactly, all 620 through HNSW.
        for memory_filter, few in (
            (MemoryFilter(status="active", owner="bob"), True),
            (MemoryFilter(status="active"), False),
        ):
            clauses, params = store.where(memory_filter, alias="m")
            assert pg_vectors.few_kept(conn, clauses, params) is few


def test_the_agent_api_keeps_and_searches_its_vectors_in_the_database(
    pg_url: str, embedder: Embedder
) -> None:
    from memory_console.api import MemoryAPI

    with MemoryAPI(pg_url, owner="alice", embedder=embedder) as api:
        dark = api.remember("I always use a dark theme in my code editor.", now=NOW).id
        lisbon = api.remember("The user lives in Lisbon.", now=NOW).id
        semantic = api.engine.semantic
        assert semantic is not None and semantic.source == "database"
        recalled = api.recall("which colours does she like when programming", k=1, now=NOW)
        assert [item.record.id for item in recalled] == [dark]
        assert recalled[0].scores["cosine"] > 0.3
        forgotten = api.forget("Forget that I live in Lisbon", now=NOW)
        assert [record.id for record in forgotten.archived] == [lisbon]
    # Written to pgvector's column on the server, one per memory, by the API's own listener.
    stored = server_rows(
        pg_url, "SELECT memory_id FROM embedding WHERE embedding IS NOT NULL ORDER BY memory_id"
    )
    assert stored == [(dark,), (lisbon,)]


def unit_vectors(count: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).normal(size=(count, 384)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_memories_of_one_text_share_one_vector_in_the_hnsw_table(
    pg_url: str, tmp_path: Path
) -> None:
    """The HNSW index holds a vector per distinct text (a graph of equal vectors falls apart
    into islands): found in distance order with every memory of its text, it comes with the
    first memory of its text and goes with the last (an erased text leaves no vector)."""
    from memory_console.store import embeddings
    from memory_console.store.postgres import vectors as pg_vectors

    texts = unit_vectors(40, seed=3)
    copies = 25
    with Store(pg_url, actor="test") as store:
        ids = store.add_many(
            [{"content": f"text {n}"} for n in range(len(texts)) for _ in range(copies)], now=NOW
        )
        of_text = {n: ids[n * copies : (n + 1) * copies] for n in range(len(texts))}
        rows = [(ident, f"hash {n}", texts[n].tobytes()) for n in of_text for ident in of_text[n]]
        embeddings.write_vectors(store, "test-model", rows)

        def distinct() -> list[str]:
            found = server_rows(pg_url, "SELECT content_hash FROM embedding_vector ORDER BY 1")
            return [str(row[0]) for row in found]

        assert len(distinct()) == len(texts)
        query = texts[0] + 0.3 * texts[1]  # nearest text 0, then text 1, then the others
        for exact in (True, False):
            found = pg_vectors.nearest_in_database(
                store, "test-model", query, MemoryFilter(status="active"), 30, exact=exact
            )
            assert {ident for ident, _ in found[:copies]} == set(of_text[0])
            assert {ident for ident, _ in found[copies:]} <= set(of_text[1])
            assert len(found) == 30
        # Text 3's memories get another text's hash (their text was edited): the old vector
        # goes, the new one comes.
        embeddings.write_vectors(
            store, "test-model", [(ident, "hash moved", texts[3].tobytes()) for ident in of_text[3]]
        )
        assert "hash 3" not in distinct() and "hash moved" in distinct()
        # An erasure of all but one memory of text 0 keeps its vector; of the last, drops it.
        store.purge(of_text[0][1:], tmp_path / "most.jsonl", now=NOW)
        assert "hash 0" in distinct()
        store.purge(of_text[0][:1], tmp_path / "last.jsonl", now=NOW)
        assert "hash 0" not in distinct() and len(distinct()) == len(texts) - 1
        # Another model's vectors dropped: none of its texts' vectors stays.
        assert sum(embeddings.drop_other_models(store, "another-model").values()) > 0
        assert distinct() == []


def test_a_later_sync_checks_only_the_texts_that_changed(
    pg_url: str, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first sync of a PostgreSQL store hashes every text; later ones (another process,
    the next console) read what memory's trigger logged since, and the memories without a
    vector, so a million memories do not cost a minute at every start."""
    from memory_console.embed.embedder import content_hash, embedding_text
    from memory_console.embed.semantic import SemanticIndex
    from memory_console.store import embeddings

    with Store(pg_url, actor="test") as store:
        ids = store.add_many([{"content": f"the user likes colour {n}"} for n in range(12)])
        assert SemanticIndex(store, embedder).sync() == 12
        store.edit(ids[3], {"content": "the user moved to Porto"}, now=NOW)
        (added,) = store.add_many([{"content": "the user plays the cello"}])
        store.protect([ids[5]], now=NOW)  # not a change of text: nothing to check

    def whole_check(store: Store) -> None:
        raise AssertionError("every text was read again")

    monkeypatch.setattr(embeddings, "active_texts_checked", whole_check)
    with Store(pg_url, actor="test") as store:
        assert SemanticIndex(store, embedder).sync() == 2
        texts = {
            ident: embedding_text(record.title, record.content, record.keywords)
            for ident, record in store.get_many([ids[3], added]).items()
        }
        assert "Porto" in texts[ids[3]] and "cello" in texts[added]
        assert embeddings.hashes_of(store, embedder.model_id, [ids[3], added]) == {
            ident: content_hash(text) for ident, text in texts.items()
        }
    # The log keeps nothing a later check needs: what came before the check is gone.
    assert server_rows(pg_url, "SELECT count(*) FROM vector_log")[0][0] <= 1


def test_a_large_first_sync_builds_the_hnsw_index_after_its_vectors(
    pg_url: str, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many vectors, more than the index holds: the index is dropped and built once after
    them (inserting each costs ten times its share of a build); a sync finding the index
    gone (one stopped in between) builds it again."""
    from memory_console.embed.semantic import SemanticIndex
    from memory_console.store.postgres import vectors as pg_vectors

    monkeypatch.setattr(pg_vectors, "REBUILD_VECTORS", 10)  # the store below is small
    query = "SELECT oid FROM pg_class WHERE relname = 'ix_embedding_vector_hnsw'"
    with Store(pg_url, actor="test") as store:
        before = server_rows(pg_url, query)
        store.add_many([{"content": f"the user collects {thing}"} for thing in THINGS])
        assert SemanticIndex(store, embedder).sync() == len(THINGS)
        built = server_rows(pg_url, query)
        assert built and built != before  # a new index, not the one the inserts went into
        store.add_many([{"content": "the user collects kites"}])
        assert SemanticIndex(store, embedder).sync() == 1  # few: inserted into the index
        assert server_rows(pg_url, query) == built
        with store.lock:
            store.connection.execute("DROP INDEX ix_embedding_vector_hnsw")
        assert SemanticIndex(store, embedder).sync() == 0
        assert server_rows(
            pg_url,
            "SELECT indisvalid FROM pg_index "
            "WHERE indexrelid = to_regclass('ix_embedding_vector_hnsw')",
        ) == [(True,)]
        found = pg_vectors.nearest_in_database(
            store, embedder.model_id, embedder.embed_query("stamps"), MemoryFilter(), 3
        )
        assert store.require(found[0][0]).content == "the user collects stamps"


THINGS = ("stamps", "coins", "vinyl records", "old maps", "fountain pens", "seashells") * 2 + (
    "comics",
    "postcards",
    "fossils",
)


# What schema 8 changed on PostgreSQL, undone: the statements that make a store as schema 7
# made it (the keyword index a generated column of memory, HNSW over every memory's vector,
# full indexes on the mostly-NULL columns).
SCHEMA_SEVEN = (
    "DROP FUNCTION memory_search_add, memory_search_drop, memory_text_edited, "
    "embedding_vector_add, embedding_vector_drop CASCADE",
    "DROP TABLE memory_search, embedding_vector",
    "DROP FUNCTION memory_search_vector",
    "ALTER TABLE memory ADD COLUMN search tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('english', coalesce(title, '')), 'A') || "
    "setweight(to_tsvector('english', coalesce(keywords, '')), 'B') || "
    "setweight(to_tsvector('english', coalesce(content, '')), 'C')) STORED",
    "CREATE INDEX ix_memory_search ON memory USING gin (search)",
    "CREATE INDEX ix_embedding_hnsw ON embedding USING hnsw (embedding vector_cosine_ops)",
    "DROP INDEX ix_memory_consolidated_into, ix_memory_external_id, ix_memory_superseded_by",
    "CREATE INDEX ix_memory_consolidated_into ON memory (consolidated_into)",
    "CREATE INDEX ix_memory_external_id ON memory (external_id)",
    "CREATE INDEX ix_memory_superseded_by ON memory (superseded_by)",
    "DROP INDEX ix_memory_namespace",  # schema 10's
    "ALTER TABLE memory DROP COLUMN namespace",
    "DROP INDEX ix_memory_due",  # schema 11's
    "ALTER TABLE memory DROP COLUMN due_at",
    "UPDATE console_meta SET value = '7' WHERE key = 'schema_version'",
)


def test_a_schema_seven_postgresql_store_is_migrated_whole(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The keyword index moves to its table with the generated column's own tsvectors, each
    text's vector to the HNSW table, and the store passes every check after."""
    import psycopg

    from memory_console.cli import main
    from memory_console.store import embeddings
    from memory_console.store.postgres import vectors as pg_vectors

    texts = unit_vectors(3, seed=5)
    with Store(pg_url, actor="test") as store:
        ids = store.add_many(
            [
                {"title": "Editor", "content": f"prefers the {word} theme"}
                for word in "dark dark light".split()
            ],
            now=NOW,
        )
        rows = [(ids[0], "hash a", texts[0].tobytes()), (ids[1], "hash a", texts[0].tobytes())]
        embeddings.write_vectors(
            store, "test-model", [*rows, (ids[2], "hash b", texts[1].tobytes())]
        )
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for statement in SCHEMA_SEVEN:
            conn.execute(statement)
    with Store(pg_url, actor="test") as store:
        assert [ident for ident, _ in store.keyword_ranking("dark")] == [ids[1], ids[0]]
        found = pg_vectors.nearest_in_database(
            store, "test-model", texts[0], MemoryFilter(), 3, exact=False
        )
        assert [ident for ident, _ in found[:2]] in ([ids[0], ids[1]], [ids[1], ids[0]])
        assert found[2][0] == ids[2]
    assert server_rows(pg_url, "SELECT value FROM console_meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    assert server_rows(pg_url, "SELECT count(*) FROM embedding_vector") == [(2,)]
    columns = server_rows(
        pg_url, "SELECT column_name FROM information_schema.columns WHERE table_name = 'memory'"
    )
    assert ("search",) not in columns and {("namespace",), ("due_at",)} <= set(columns)
    capsys.readouterr()
    assert main(["check", "--db", pg_url]) == 0, capsys.readouterr()


def test_a_postgresql_migration_runs_once_in_one_transaction(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store one schema behind is migrated when opened: every step and the version in one
    transaction (a failing step leaves the old schema whole), and a second process opening it
    at the same time waits on the writers' lock and finds it migrated (its steps run once)."""
    import multiprocessing

    import psycopg

    from memory_console.store import schema
    from memory_console.store.postgres import migrations

    Store(pg_url).close()
    current = schema.SCHEMA_VERSION
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 1)

    def failing(conn: object) -> None:
        conn.execute("ALTER TABLE memory ADD COLUMN mood TEXT")  # type: ignore[attr-defined]
        raise RuntimeError("a step that fails halfway")

    monkeypatch.setitem(migrations.POSTGRES_MIGRATIONS, current, failing)
    with pytest.raises(RuntimeError, match="halfway"):
        Store(pg_url)
    columns = server_rows(
        pg_url, "SELECT column_name FROM information_schema.columns WHERE table_name = 'memory'"
    )
    assert ("mood",) not in columns
    assert server_rows(pg_url, "SELECT value FROM console_meta WHERE key = 'schema_version'") == [
        (str(current),)
    ]

    def adding(conn: object) -> None:
        conn.execute("ALTER TABLE memory ADD COLUMN mood TEXT")  # type: ignore[attr-defined]

    monkeypatch.setitem(migrations.POSTGRES_MIGRATIONS, current, adding)
    # Another session holds the writers' lock while two openers start; both wait, one
    # migrates, the other reads the new version under the lock and runs no step.
    from memory_console.store.postgres import WRITE_LOCK_KEY

    with psycopg.connect(pg_url, autocommit=True) as holder:
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
        context = multiprocessing.get_context("fork")
        errors = context.Queue()

        def open_store() -> None:
            try:
                Store(pg_url).close()
                errors.put("")
            except Exception as error:  # reported to the test, not lost in the child
                errors.put(repr(error))

        openers = [context.Process(target=open_store) for _ in range(2)]
        for opener in openers:
            opener.start()
        waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        deadline = time.monotonic() + 60
        while holder.execute(waiting).fetchone() != (2,) and time.monotonic() < deadline:
            time.sleep(0.05)  # both openers have read the old version and wait on the lock
        holder.execute("COMMIT")
    for opener in openers:
        opener.join(60)
    assert [errors.get(timeout=5) for _ in openers] == ["", ""]
    assert server_rows(pg_url, "SELECT value FROM console_meta WHERE key = 'schema_version'") == [
        (str(current + 1),)
    ]
    assert ("mood",) in server_rows(
        pg_url, "SELECT column_name FROM information_schema.columns WHERE table_name = 'memory'"
    )

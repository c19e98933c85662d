"""A PostgreSQL store's schema: SQLModel's tables compiled for PostgreSQL, the parts only
PostgreSQL has (the keyword index's table, the vector column and the distinct vectors' table),
the store's facts, and the key sequences moved past every id a store has named."""

from __future__ import annotations

import re
import time
from typing import Any

from memory_console.store import ids, schema
from memory_console.store.connection import Connection
from memory_console.store.postgres.connection import APPLICATION
from memory_console.store.vector_log import new_store_id

# The first schema version a PostgreSQL store was made at: there is none older to migrate.
FIRST_SCHEMA = 7
EMBEDDING_DIMENSIONS = 384  # the bundled embedder's; pgvector's HNSW needs a fixed size
# The text search configuration: stems English words as SQLite's porter tokenizer does.
TEXT_SEARCH_CONFIG = "english"

# Parts of the schema that SQLModel's tables cannot declare (docs/ARCHITECTURE.md,
# "Two backends"): the keyword index's table, and the vector column with the distinct
# vectors' table. *_SCHEMA make tables, columns, functions and triggers; *_INDEXES, their
# indexes (a bulk load builds those after its rows).
#
# Schema 8: the keyword index is a table of its own, memory_search, one tsvector per memory,
# kept by triggers on memory as SQLite's FTS5 table is (store/ddl.py). Until schema 8 it was a
# generated column of memory: every update of a memory (a decay run's new confidence) then
# computed the tsvector again and, since the row moved, wrote each of its words into the GIN
# index again; at 1,000,000 memories that was 5 to 6 s of a 21 s decay apply.
SEARCH_TABLE = "memory_search"
SEARCH_SCHEMA = (
    # Weights as the SQLite FTS5 ranking's (title 4, keywords 2, content 1): A, B and C.
    "CREATE FUNCTION memory_search_vector(title text, keywords text, content text) "
    "RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN "
    f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}'::regconfig, coalesce(title, '')), 'A') || "
    f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}'::regconfig, coalesce(keywords, '')), 'B') || "
    f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}'::regconfig, coalesce(content, '')), 'C')",
    f"CREATE TABLE {SEARCH_TABLE} (memory_id BIGINT NOT NULL PRIMARY KEY, "
    "search tsvector NOT NULL)",
    "CREATE FUNCTION memory_search_add() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"INSERT INTO {SEARCH_TABLE} (memory_id, search) "
    "SELECT id, memory_search_vector(title, keywords, content) FROM added; "
    "RETURN NULL; END $$",
    "CREATE FUNCTION memory_search_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"DELETE FROM {SEARCH_TABLE} AS s USING removed AS r WHERE s.memory_id = r.id; "
    "RETURN NULL; END $$",
    # A memory's text changed: its keyword entry is made again, and vector_log names it, so
    # that the next sync of the vectors checks this memory's text hash and not every one's
    # (SemanticIndex.sync; on SQLite a trigger of store/vector_log.py logs the same change).
    "CREATE FUNCTION memory_text_edited() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"UPDATE {SEARCH_TABLE} SET search = "
    "memory_search_vector(NEW.title, NEW.keywords, NEW.content) WHERE memory_id = NEW.id; "
    "INSERT INTO vector_log (memory_id) VALUES (NEW.id); RETURN NULL; END $$",
    "CREATE TRIGGER memory_search_ai AFTER INSERT ON memory REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_search_add()",
    "CREATE TRIGGER memory_search_ad AFTER DELETE ON memory REFERENCING OLD TABLE AS removed "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_search_drop()",
    # Only an update that changes the text runs the function (the WHEN is read in the
    # executor, row by row, without calling it).
    "CREATE TRIGGER memory_search_au AFTER UPDATE OF title, keywords, content ON memory "
    "FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title "
    "OR OLD.keywords IS DISTINCT FROM NEW.keywords OR OLD.content IS DISTINCT FROM NEW.content) "
    "EXECUTE FUNCTION memory_text_edited()",
)
TEXT_INDEX = "ix_memory_search"
SEARCH_INDEXES = (f"CREATE INDEX {TEXT_INDEX} ON {SEARCH_TABLE} USING gin (search)",)
# Schema 8: the HNSW index holds one vector per distinct text (model and content hash), not
# one per memory. Memories of one text share one vector, and a graph of many equal vectors
# falls apart into islands that the search cannot leave: at 1,000,000 memories of 51,015
# texts, recall@10 was 0.57. embedding_vector is kept by triggers on embedding, in the
# transaction of every write (COPY included): a vector comes with the first memory of its
# text and goes with the last, so an erased text leaves no vector behind.
VECTOR_TABLE = "embedding_vector"
VECTOR_SCHEMA = (
    f"ALTER TABLE embedding ADD COLUMN embedding vector({EMBEDDING_DIMENSIONS})",
    f"CREATE TABLE {VECTOR_TABLE} (model_id VARCHAR NOT NULL, content_hash VARCHAR NOT NULL, "
    f"embedding vector({EMBEDDING_DIMENSIONS}) NOT NULL, PRIMARY KEY (model_id, content_hash))",
    "CREATE FUNCTION embedding_vector_add() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"INSERT INTO {VECTOR_TABLE} (model_id, content_hash, embedding) "
    "SELECT DISTINCT ON (model_id, content_hash) model_id, content_hash, embedding FROM added "
    "WHERE embedding IS NOT NULL ON CONFLICT DO NOTHING; RETURN NULL; END $$",
    "CREATE FUNCTION embedding_vector_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"DELETE FROM {VECTOR_TABLE} AS v USING (SELECT DISTINCT model_id, content_hash "
    "FROM removed) AS r WHERE v.model_id = r.model_id AND v.content_hash = r.content_hash "
    "AND NOT EXISTS (SELECT 1 FROM embedding AS e WHERE e.content_hash = r.content_hash "
    "AND e.model_id = r.model_id AND e.embedding IS NOT NULL); RETURN NULL; END $$",
    "CREATE TRIGGER embedding_vector_ai AFTER INSERT ON embedding "
    "REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION embedding_vector_add()",
    "CREATE TRIGGER embedding_vector_au_add AFTER UPDATE ON embedding "
    "REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION embedding_vector_add()",
    "CREATE TRIGGER embedding_vector_au_drop AFTER UPDATE ON embedding "
    "REFERENCING OLD TABLE AS removed FOR EACH STATEMENT "
    "EXECUTE FUNCTION embedding_vector_drop()",
    "CREATE TRIGGER embedding_vector_ad AFTER DELETE ON embedding "
    "REFERENCING OLD TABLE AS removed FOR EACH STATEMENT "
    "EXECUTE FUNCTION embedding_vector_drop()",
)
VECTOR_INDEX = "ix_embedding_vector_hnsw"
# ef_construction 400 (pgvector's default is 64): each vector is linked to its neighbours
# found among 400 candidates, so that dense clusters of near-identical texts stay reachable
# from the rest of the graph. Measured at 51,015 demo texts, recall@10 at ef_search 400 went
# from 0.84 to 0.965 (200 queries); the build took 26 s instead of 15 s, and a new text's
# vector 5.0 ms instead of 1.6 ms to insert (docs/ARCHITECTURE.md, "Two backends").
VECTOR_INDEXES = (
    f"CREATE INDEX {VECTOR_INDEX} ON {VECTOR_TABLE} USING hnsw (embedding vector_cosine_ops) "
    "WITH (m = 16, ef_construction = 400)",
)


def schema_statements(with_indexes: bool = True) -> list[str]:
    """The DDL of the current schema for PostgreSQL: SQLModel's tables compiled by
    SQLAlchemy's postgresql dialect, then the parts only PostgreSQL has (imports SQLModel).
    Without indexes: the tables and columns only, for a bulk load that builds the indexes
    (index_statements) once after its rows.

    Flags stay SMALLINT 0/1 as on SQLite, so the Store's SQL and records read both alike;
    integers are BIGINT (and keys BIGSERIAL), 64 bits as SQLite's, so every value an SQLite
    store holds fits (a copy between the two loses nothing)."""
    from sqlalchemy.schema import CreateTable

    from memory_console.store import tables

    pg = compiler()
    statements = ["CREATE EXTENSION IF NOT EXISTS vector"]
    for table in tables.SQLModel.metadata.sorted_tables:
        created = str(CreateTable(table).compile(dialect=pg)).strip()
        # An integer key's SERIAL comes from the column, not the type compiler above.
        statements.append(re.sub(r"\bSERIAL\b", "BIGSERIAL", created))
    statements.extend((*SEARCH_SCHEMA, *VECTOR_SCHEMA))
    if with_indexes:
        statements.extend(index_statements())
    return statements


def index_statements() -> list[str]:
    """Every index but the keys': the tables' own, the keyword index and the vector index."""
    from sqlalchemy.schema import CreateIndex

    from memory_console.store import tables

    pg = compiler()
    statements = [*SEARCH_INDEXES, *VECTOR_INDEXES]
    for table in tables.SQLModel.metadata.sorted_tables:
        for index in sorted(table.indexes, key=lambda ix: ix.name or ""):
            statements.append(str(CreateIndex(index).compile(dialect=pg)).strip())
    statements.extend(tables.extra_index_statements())
    return statements


def compiler() -> Any:
    """SQLAlchemy's postgresql dialect with flags as SMALLINT and integers as BIGINT."""
    from sqlalchemy.dialects.postgresql.base import PGDialect, PGTypeCompiler

    class FlagsAsIntegers(PGTypeCompiler):
        def visit_boolean(self, type_: Any, **kw: Any) -> str:
            return "SMALLINT"

        def visit_integer(self, type_: Any, **kw: Any) -> str:
            return "BIGINT"

    pg = PGDialect()
    pg.type_compiler_instance = FlagsAsIntegers(pg)
    return pg


def create_schema(conn: Connection) -> None:
    """Create every table and index in one transaction, and record the schema version."""
    conn.execute("BEGIN")
    try:
        write_schema(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def write_schema(conn: Connection, *, with_indexes: bool = True) -> None:
    """The schema's statements and the store's facts (application, creation time, a new
    store_id, the schema version), inside the caller's transaction."""
    for statement in schema_statements(with_indexes):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO console_meta(key, value) VALUES ('application', ?), "
        "('created_at', ?), ('store_id', ?), ('schema_version', ?)",
        (APPLICATION, str(time.time()), new_store_id(), str(schema.SCHEMA_VERSION)),
    )


def table_names(conn: Connection) -> set[str]:
    """The tables of the connection's current schema."""
    return {
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
    }


def set_sequences(conn: Connection) -> None:
    """Move every key's sequence past the largest id its table holds (ids given by a load or
    a copy do not advance it), and the memory, event and run keys past every id their history
    names (store/ids.py), so the next row numbered by the database takes a new id."""
    for table, columns in schema.declared_tables().items():
        key = next(column for column in columns if column.primary_key)
        if key.name not in ("id", "seq") or table in ids.FLOORS:
            continue
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{key.name}'), "
            f"coalesce((SELECT max({key.name}) FROM {table}), 0) + 1, false)"
        )
    raise_sequences(conn)


def raise_sequences(conn: Any, given: dict[str, int] | None = None) -> None:
    """Move each key table's sequence past its floor (or the floor given); never back: the
    sequence's own next value counts, so ids it handed out before are not handed out again.
    conn is the store's connection (`?` parameters, as on SQLite)."""
    found = ids.floors(conn)
    for table, floor in found.items():
        floor = max(floor, (given or {}).get(table, 0))
        sequence = conn.execute("SELECT pg_get_serial_sequence(?, 'id')", (table,)).fetchone()[0]
        conn.execute(
            "SELECT setval(?::regclass, greatest(?, nextval(?::regclass)))",
            (sequence, floor, sequence),
        )

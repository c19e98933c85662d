"""An SQLite store's DDL: SQLModel's tables compiled for SQLite, their indexes, and the FTS5
text index with the triggers that keep it in step (store/postgres/schema.py is PostgreSQL's)."""

from __future__ import annotations

# FTS5 is kept in step by our own triggers rather than sqlite-utils' enable_fts triggers: those
# fire on every UPDATE, so a decay pass over a million rows would rewrite the whole text index.
FTS_DDL = (
    "CREATE VIRTUAL TABLE memory_fts USING fts5("
    "title, content, keywords, content='memory', content_rowid='id', "
    "tokenize='porter unicode61 remove_diacritics 2')",
)
FTS_TRIGGERS = (
    "CREATE TRIGGER memory_fts_ai AFTER INSERT ON memory BEGIN "
    "INSERT INTO memory_fts(rowid, title, content, keywords) "
    "VALUES (new.id, new.title, new.content, new.keywords); END",
    "CREATE TRIGGER memory_fts_ad AFTER DELETE ON memory BEGIN "
    "INSERT INTO memory_fts(memory_fts, rowid, title, content, keywords) "
    "VALUES ('delete', old.id, old.title, old.content, old.keywords); END",
    "CREATE TRIGGER memory_fts_au AFTER UPDATE OF title, content, keywords ON memory BEGIN "
    "INSERT INTO memory_fts(memory_fts, rowid, title, content, keywords) "
    "VALUES ('delete', old.id, old.title, old.content, old.keywords); "
    "INSERT INTO memory_fts(rowid, title, content, keywords) "
    "VALUES (new.id, new.title, new.content, new.keywords); END",
)
FTS_TRIGGER_NAMES = ("memory_fts_ai", "memory_fts_ad", "memory_fts_au")


def schema_statements(with_indexes: bool = True) -> list[str]:
    """The DDL of the current schema, generated from the SQLModel tables (imports SQLModel)."""
    from sqlalchemy.dialects import sqlite as sqlite_dialect
    from sqlalchemy.schema import CreateTable

    from memory_console.store import tables

    dialect = sqlite_dialect.dialect()
    statements = []
    for table in tables.SQLModel.metadata.sorted_tables:
        statements.append(str(CreateTable(table).compile(dialect=dialect)).strip())
    if with_indexes:
        statements.extend(index_statements())
    statements.extend(FTS_DDL)
    return statements


def index_statements() -> list[str]:
    """Every secondary index: separate so bulk loads can build them once, after inserting."""
    from sqlalchemy.dialects import sqlite as sqlite_dialect
    from sqlalchemy.schema import CreateIndex

    from memory_console.store import tables

    dialect = sqlite_dialect.dialect()
    statements = []
    for table in tables.SQLModel.metadata.sorted_tables:
        for index in sorted(table.indexes, key=lambda ix: ix.name or ""):
            statements.append(str(CreateIndex(index).compile(dialect=dialect)).strip())
    statements.extend(tables.extra_index_statements())
    return statements

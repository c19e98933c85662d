"""PostgreSQL stores: everything specific to PostgreSQL lives in this package, beside the SQL
SQLite and PostgreSQL share (store/dialect.py is SQLite's; dialect.py here is PostgreSQL's).

url.py reads and shows a store's URL; connection.py is the psycopg connection the Store talks
through; db.py opens a store (schema.py creates it, migrations.py takes it forward); dialect.py
and bulk.py are its SQL; load.py fills a new database in bulk (the demo, a copy); vectors.py
searches pgvector; check.py and erase.py are `check` and the erasure's aftermath on
PostgreSQL. psycopg is imported only when a PostgreSQL store is opened, and nothing outside
this package imports it.

Names load on first use, so that reading a location (is_url, shown_url) imports no more than
url.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_console.lazy import names_from

if TYPE_CHECKING:
    from memory_console.store.postgres.connection import Connection, placeholders
    from memory_console.store.postgres.db import NoStoreHere, connect
    from memory_console.store.postgres.dialect import WRITE_LOCK_KEY
    from memory_console.store.postgres.load import load_new_postgres
    from memory_console.store.postgres.schema import (
        FIRST_SCHEMA,
        VECTOR_INDEX,
        VECTOR_INDEXES,
        VECTOR_TABLE,
    )
    from memory_console.store.postgres.url import foreign_location, is_url, shown_url

_HOMES: dict[str, tuple[str, ...]] = {
    "connection": ("Connection", "placeholders"),
    "db": ("NoStoreHere", "connect"),
    "dialect": ("WRITE_LOCK_KEY",),
    "load": ("load_new_postgres",),
    "schema": ("FIRST_SCHEMA", "VECTOR_INDEX", "VECTOR_INDEXES", "VECTOR_TABLE"),
    "url": ("foreign_location", "is_url", "shown_url"),
}
__all__ = [
    "FIRST_SCHEMA",
    "VECTOR_INDEX",
    "VECTOR_INDEXES",
    "VECTOR_TABLE",
    "WRITE_LOCK_KEY",
    "Connection",
    "NoStoreHere",
    "connect",
    "foreign_location",
    "is_url",
    "load_new_postgres",
    "placeholders",
    "shown_url",
]

__getattr__ = names_from(__name__, _HOMES, globals())

"""Opening a PostgreSQL store: creating its schema in an empty database, accepting one at
this program's schema (migrating an older one), refusing a foreign or newer one."""

from __future__ import annotations

from memory_console.store import schema
from memory_console.store.errors import StoreError
from memory_console.store.postgres.connection import APPLICATION, Connection
from memory_console.store.postgres.migrations import migrate
from memory_console.store.postgres.schema import create_schema, table_names
from memory_console.store.postgres.url import shown_url


class NoStoreHere(StoreError):
    """The database holds no table: no store was made in it yet (and this open makes none)."""


def connect(url: str, *, read_only: bool = False, create: bool = True) -> Connection:
    """Open a PostgreSQL store: create its schema in an empty database (when allowed), accept
    one at this program's schema, refuse a foreign or newer one."""
    conn = Connection(url, read_only=read_only)
    try:
        prepare(conn, url, read_only=read_only, create=create)
    except BaseException:
        conn.close()
        raise
    return conn


def prepare(conn: Connection, url: str, *, read_only: bool, create: bool) -> None:
    where = shown_url(url)
    tables = table_names(conn)
    if not tables:
        if read_only:
            raise StoreError(f"{where}: empty database; read-only mode does not create a store")
        if not create:
            raise NoStoreHere(
                f"{where}: no store in this database; create one with: "
                f"memory-console import FILE --db {where}"
            )
        create_schema(conn)
        return
    application = None
    if "console_meta" in tables:
        row = conn.execute("SELECT value FROM console_meta WHERE key = 'application'").fetchone()
        application = row[0] if row else None
    if application != APPLICATION or not schema.OUR_TABLES <= tables:
        listed = ", ".join(sorted(tables)[:5])
        raise StoreError(
            f"{where}: a database of another application (tables: {listed}); "
            "memory-console will not touch it"
        )
    row = conn.execute("SELECT value FROM console_meta WHERE key = 'schema_version'").fetchone()
    version = int(row[0]) if row else 0
    if version > schema.SCHEMA_VERSION:
        raise StoreError(
            f"{where}: written by a newer memory-console (schema {version}; this program knows "
            f"up to {schema.SCHEMA_VERSION}); upgrade memory-console to open it"
        )
    if version < schema.SCHEMA_VERSION:
        if read_only:
            raise StoreError(
                f"{where}: schema {version} needs a migration to {schema.SCHEMA_VERSION}; "
                "open it once without --read-only"
            )
        migrate(conn, where, version)

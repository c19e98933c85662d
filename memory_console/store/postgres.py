"""PostgreSQL stores: the URL, the connection the Store talks through, and the schema's DDL.

Everything PostgreSQL-specific lives here, beside the SQL that differs in store/dialect.py;
psycopg is imported only when a PostgreSQL store is opened, so SQLite users never pay for it.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from memory_console.store.dialect import POSTGRES
from memory_console.store.errors import StoreBusyError, StoreError

if TYPE_CHECKING:
    import psycopg

URL_SCHEMES = ("postgresql", "postgres")
APPLICATION = "memory-console"
# The first schema version a PostgreSQL store was made at: there is none older to migrate.
FIRST_SCHEMA = 7
EMBEDDING_DIMENSIONS = 384  # the bundled embedder's; pgvector's HNSW needs a fixed size
# Every write transaction takes this advisory lock first, so writers queue one at a time
# as SQLite's BEGIN IMMEDIATE makes them: each reads the latest committed state after the
# lock, so a read-check-write (a plan's revision check, a reinforcement) loses no write.
WRITE_LOCK_KEY = 0x4D434F4E  # "MCON", as SQLite stores' application_id
# The text search configuration: stems English words as SQLite's porter tokenizer does.
TEXT_SEARCH_CONFIG = "english"

# Parts of the schema that SQLModel's tables cannot declare (docs/ARCHITECTURE.md,
# "Two backends"): the keyword index and the vector column with its index.
SEARCH_DDL = (
    # Weights as the SQLite FTS5 ranking's (title 4, keywords 2, content 1): A, B and C.
    "ALTER TABLE memory ADD COLUMN search tsvector GENERATED ALWAYS AS ("
    f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}', coalesce(title, '')), 'A') || "
    f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}', coalesce(keywords, '')), 'B') || "
    f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}', coalesce(content, '')), 'C')) STORED",
    "CREATE INDEX ix_memory_search ON memory USING gin (search)",
)
VECTOR_DDL = (
    f"ALTER TABLE embedding ADD COLUMN embedding vector({EMBEDDING_DIMENSIONS})",
    "CREATE INDEX ix_embedding_hnsw ON embedding USING hnsw (embedding vector_cosine_ops)",
)


class NoStoreHere(StoreError):
    """The database holds no table: no store was made in it yet (and this open makes none)."""


def is_url(location: object) -> bool:
    """Whether --db (or a setting) names a PostgreSQL database rather than a file."""
    return isinstance(location, str) and location.split("://", 1)[0].lower() in URL_SCHEMES


def shown_url(url: str) -> str:
    """The URL as messages show it: without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit((parts.scheme, f"{user}@{netloc[1]}", parts.path, parts.query, ""))


NAMED = re.compile(r"(?<!:):([A-Za-z_]\w*)")


@functools.lru_cache(maxsize=512)
def placeholders(sql: str) -> str:
    """The statement with SQLite's `?` and `:name` parameters as psycopg's `%s` and
    `%(name)s` (and a literal `%` doubled); quoted strings and names are left as they are."""
    out: list[str] = []
    for token in re.split(r"('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\")", sql):
        if token.startswith(("'", '"')):
            out.append(token.replace("%", "%%"))
        else:
            code = token.replace("%", "%%").replace("?", "%s")
            out.append(NAMED.sub(r"%(\1)s", code))
    return "".join(out)


class Cursor:
    """The rows of one statement, read as sqlite3's cursor reads them."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._cursor.fetchone() if self._cursor.description else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._cursor.fetchall() if self._cursor.description else []

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        return self._cursor.fetchmany(size) if self._cursor.description else []

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> None:
        """PostgreSQL reports no row id: an insert that needs its id says RETURNING id."""
        return None


class Connection:
    """A psycopg connection with the calls of store.connection.Connection, as sqlite3's: `?`
    parameters, execute/executemany, in_transaction. It runs in autocommit mode, so
    transactions are explicit (BEGIN ... COMMIT), as on SQLite. Database errors become
    StoreError (StoreBusyError for a lock or serialization conflict)."""

    def __init__(self, url: str, *, read_only: bool) -> None:
        import psycopg
        from psycopg.types.numeric import FloatLoader

        self.url = url
        try:
            self._conn = psycopg.connect(url, autocommit=True, application_name=APPLICATION)
        except psycopg.Error as error:
            raise StoreError(f"{shown_url(url)}: cannot connect: {one_line(error)}") from error
        # sum() and avg() answer numeric (Decimal); the store's figures are floats.
        self._conn.adapters.register_loader("numeric", FloatLoader)
        if read_only:
            self._conn.execute("SET default_transaction_read_only = on")

    dialect = POSTGRES

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = (), /) -> Cursor:
        values = dict(params) if isinstance(params, Mapping) else list(params)
        with translated_errors(self.url):
            return Cursor(self._conn.execute(placeholders(sql), values or None))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Cursor:
        cursor = self._conn.cursor()
        with translated_errors(self.url):
            cursor.executemany(placeholders(sql), [list(row) for row in rows])
        return Cursor(cursor)

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self._conn.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self._conn.close()

    def set_progress_handler(self, handler: Any, steps: int, /) -> None:
        """SQLite's progress handler has no PostgreSQL twin: a long read runs to its end."""


@contextmanager
def translated_errors(url: str) -> Iterator[None]:
    """psycopg's errors of a statement, as the Store's errors."""
    import psycopg
    from psycopg import errors

    try:
        yield
    except (errors.LockNotAvailable, errors.SerializationFailure, errors.DeadlockDetected) as e:
        raise StoreBusyError(f"the database is busy ({one_line(e)}); try again") from e
    except psycopg.Error as error:
        raise StoreError(f"{shown_url(url)}: {one_line(error)}") from error


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


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
    from memory_console.store.db import OUR_TABLES, SCHEMA_VERSION

    where = shown_url(url)
    tables = {
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
    }
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
    if application != APPLICATION or not OUR_TABLES <= tables:
        listed = ", ".join(sorted(tables)[:5])
        raise StoreError(
            f"{where}: a database of another application (tables: {listed}); "
            "memory-console will not touch it"
        )
    row = conn.execute("SELECT value FROM console_meta WHERE key = 'schema_version'").fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{where}: written by a newer memory-console (schema {version}; this program knows "
            f"up to {SCHEMA_VERSION}); upgrade memory-console to open it"
        )
    if version < SCHEMA_VERSION:
        if read_only:
            raise StoreError(
                f"{where}: schema {version} needs a migration to {SCHEMA_VERSION}; "
                "open it once without --read-only"
            )
        migrate(conn, where, version)


def schema_statements(with_indexes: bool = True) -> list[str]:
    """The DDL of the current schema for PostgreSQL: SQLModel's tables compiled by
    SQLAlchemy's postgresql dialect, then the parts only PostgreSQL has (imports SQLModel).

    Flags stay SMALLINT 0/1 as on SQLite, so the Store's SQL and records read both alike;
    integers are BIGINT (and keys BIGSERIAL), 64 bits as SQLite's, so every value an SQLite
    store holds fits (a copy between the two loses nothing)."""
    from sqlalchemy.dialects.postgresql.base import PGDialect, PGTypeCompiler
    from sqlalchemy.schema import CreateIndex, CreateTable

    from memory_console.store import tables

    class FlagsAsIntegers(PGTypeCompiler):
        def visit_boolean(self, type_: Any, **kw: Any) -> str:
            return "SMALLINT"

        def visit_integer(self, type_: Any, **kw: Any) -> str:
            return "BIGINT"

    pg = PGDialect()
    pg.type_compiler_instance = FlagsAsIntegers(pg)
    statements = ["CREATE EXTENSION IF NOT EXISTS vector"]
    for table in tables.SQLModel.metadata.sorted_tables:
        created = str(CreateTable(table).compile(dialect=pg)).strip()
        # An integer key's SERIAL comes from the column, not the type compiler above.
        statements.append(re.sub(r"\bSERIAL\b", "BIGSERIAL", created))
    statements.extend(SEARCH_DDL)
    statements.extend(VECTOR_DDL)
    if with_indexes:
        for table in tables.SQLModel.metadata.sorted_tables:
            for index in sorted(table.indexes, key=lambda ix: ix.name or ""):
                statements.append(str(CreateIndex(index).compile(dialect=pg)).strip())
        for name, columns in tables.INDEXED_COMPOSITES:
            owner = "memory_event" if name.startswith("ix_memory_event") else "memory"
            statements.append(f"CREATE INDEX {name} ON {owner} ({', '.join(columns)})")
    return statements


def create_schema(conn: Connection) -> None:
    """Create every table and index in one transaction, and record the schema version."""
    from memory_console.store.db import SCHEMA_VERSION
    from memory_console.store.vector_log import new_store_id

    conn.execute("BEGIN")
    try:
        for statement in schema_statements():
            conn.execute(statement)
        conn.execute(
            "INSERT INTO console_meta(key, value) VALUES ('application', ?), "
            "('created_at', ?), ('store_id', ?), ('schema_version', ?)",
            (APPLICATION, str(time.time()), new_store_id(), str(SCHEMA_VERSION)),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def migrate(conn: Connection, where: str, version: int) -> None:
    """Run every forward migration and the version's update in one transaction (PostgreSQL's
    DDL is transactional): the store ends at its old schema or fully migrated. No copy is
    made: the operator backs the database up (pg_dump) before upgrading the program."""
    from memory_console.store.db import SCHEMA_VERSION
    from memory_console.store.migrations import POSTGRES_MIGRATIONS

    conn.execute("BEGIN")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))
        for step in range(version, SCHEMA_VERSION):
            if step not in POSTGRES_MIGRATIONS:
                raise StoreError(f"{where}: no migration from schema {step}")
            POSTGRES_MIGRATIONS[step](conn)
        conn.execute(
            "UPDATE console_meta SET value = ? WHERE key = 'schema_version'",
            (str(SCHEMA_VERSION),),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise

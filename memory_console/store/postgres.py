"""PostgreSQL stores: the URL, the connection the Store talks through, and the schema's DDL.

Everything PostgreSQL-specific lives here, beside the SQL that differs in store/dialect.py;
psycopg is imported only when a PostgreSQL store is opened, so SQLite users never pay for it.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

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
# "Two backends"): the keyword index's table, and the vector column with the distinct
# vectors' table. *_SCHEMA make tables, columns, functions and triggers; *_INDEXES, their
# indexes (a bulk load builds those after its rows).
#
# Schema 8: the keyword index is a table of its own, memory_search, one tsvector per memory,
# kept by triggers on memory as SQLite's FTS5 table is (store/db.py). Until schema 8 it was a
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


# How often a cancellable statement's watcher asks whether to cancel (set_progress_handler).
CANCEL_POLL = 0.02


class StoreInterrupted(StoreError):
    """A statement cancelled on the server because its reader asked (a long read's Escape)."""


class NoStoreHere(StoreError):
    """The database holds no table: no store was made in it yet (and this open makes none)."""


# A location that starts as a URL does: a scheme, ':' and, as a URL has them, '//'.
URL_START = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):(//)?")
# A password among a URL's parameters (password=, sslpassword=, in any case): it is left out
# with everything after it, since an unencoded '&' in it would make its tail look like
# another parameter.
PASSWORD_PARAMETER = re.compile(r"[?&][^?&=#]*password=", re.IGNORECASE)
# A password in a connection string of keywords (host=... password=...).
PASSWORD_KEYWORD = re.compile(r"\bpassword\s*=", re.IGNORECASE)
HIDDEN = "***"  # what a hidden password is shown as
URL_FORM = "postgresql://[user@]host[:port]/database[?parameter=value&...]"


def is_url(location: object) -> bool:
    """Whether --db (or a setting) names a PostgreSQL database rather than a file: its scheme
    is postgresql or postgres, in any case, with or without a driver (postgresql+psycopg)."""
    if not isinstance(location, str):
        return False
    start = URL_START.match(location)
    return start is not None and start.group(1).lower().split("+", 1)[0] in URL_SCHEMES


def shown_url(location: object) -> str:
    """The store as every message, file and banner names it: a file's path as it is; a URL
    (of any scheme, however malformed) without its password, whether given as
    user:password@ or as a password parameter, so that the URL shown still opens the store
    with the password given as PostgreSQL clients take it (PGPASSWORD, ~/.pgpass). When the
    URL cannot be read for sure, more is left out rather than less."""
    text = str(location)
    start = URL_START.match(text)
    if start is None or not (start.group(2) or is_url(text)):
        keyword = PASSWORD_KEYWORD.search(text)
        return text if keyword is None else text[: keyword.end()] + HIDDEN
    rest = text[start.end() :]
    parameter = PASSWORD_PARAMETER.search(rest)
    if parameter is not None:
        rest = rest[: parameter.start()]
    # user:password@host: a password may hold an unencoded '@', so the last '@' ends it.
    at = rest.rfind("@")
    colon = rest.find(":", 0, at) if at > 0 else -1
    if colon >= 0:
        rest = rest[:colon] + rest[at:]
    return text[: start.end()] + rest


def url_secrets(url: str) -> list[str]:
    """Every password `url` holds (user:password@, password parameters), as written and
    percent-decoded, longest first: what a client library's message must not repeat."""
    start = URL_START.match(url)
    if start is None:
        return []
    rest = url[start.end() :]
    found: list[str] = []
    parameters = list(PASSWORD_PARAMETER.finditer(rest))
    for parameter in parameters:
        value = rest[parameter.end() :]
        found += [value, value.split("&", 1)[0]]
    if parameters:
        rest = rest[: parameters[0].start()]
    at = rest.rfind("@")
    colon = rest.find(":", 0, at) if at > 0 else -1
    if colon >= 0:
        found.append(rest[colon + 1 : at])
    secrets = {text for value in found for text in (value, unquote(value)) if text}
    return sorted(secrets, key=len, reverse=True)


def without_secrets(message: str, url: str) -> str:
    """A client library's message about `url` with the URL as shown and its passwords hidden
    (libpq repeats a URL, or a part of it, when it cannot read it)."""
    message = message.replace(url, shown_url(url))
    for secret in url_secrets(url):
        message = message.replace(secret, HIDDEN)
    return message


def foreign_location(location: str) -> str | None:
    """Why `location` (--db, a setting, a copy's destination) names no store although it
    looks like a database's address: another scheme's URL, or a connection string of
    keywords. It is told without the location, which may hold a password."""
    start = URL_START.match(location)
    if start is not None and start.group(2) and not is_url(location):
        return (
            f"{start.group(1)}:// names no store: a store is a file or a PostgreSQL database "
            f"({URL_FORM})"
        )
    if not is_url(location) and PASSWORD_KEYWORD.search(location):
        return (
            "a connection string of keywords names no store: give a file or a PostgreSQL URL "
            f"({URL_FORM}), its password in PGPASSWORD or ~/.pgpass"
        )
    return None


def client_url(url: str) -> str:
    """The URL as libpq reads it: the scheme in lower case and without a driver's name.
    StoreError, naming the URL as shown, when it is no URL a client can read, or when libpq
    would read it otherwise than `shown_url` does (a password's unencoded '@' or '/'
    would make part of it the host, the port or the database, and print it)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    shown = shown_url(url)
    start = URL_START.match(url)
    if start is None or not start.group(2):
        raise StoreError(f"{shown}: not a PostgreSQL URL ({URL_FORM})")
    rest = url[start.end() :]
    # libpq's user information ends at the first '@' or '/'; what follows, up to the
    # parameters, is the host, the port and the database, which hold no '@'.
    ends = [index for index in (rest.find("@"), rest.find("/")) if index >= 0]
    after = rest[min(ends) + 1 :] if ends and rest[min(ends)] == "@" else rest
    if "@" in after.split("?", 1)[0]:
        raise StoreError(
            f"{shown}: the user or password holds an '@' or '/' that is not percent-encoded "
            "(write '@' as %40, '/' as %2F); nothing was opened"
        )
    host = after.split("/", 1)[0].split("?", 1)[0]
    if host.count("[") != host.count("]"):
        raise StoreError(f"{shown}: an IPv6 host's '[' has no ']'; nothing was opened")
    readable = "postgresql://" + rest
    try:
        conninfo_to_dict(readable)
    except psycopg.Error as error:
        # libpq's own words are not repeated: they quote the part it could not read, which
        # may be a piece of the password.
        raise StoreError(
            f"{shown}: not a PostgreSQL URL a client can read ({URL_FORM}; a space, '%' or "
            "other special character in the user or password is percent-encoded)"
        ) from error
    return readable


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
        readable = client_url(url)
        try:
            self._conn = psycopg.connect(readable, autocommit=True, application_name=APPLICATION)
        except psycopg.Error as error:
            said = without_secrets(without_secrets(one_line(error), readable), url)
            raise StoreError(f"{shown_url(url)}: cannot connect: {said}") from error
        # sum() and avg() answer numeric (Decimal); the store's figures are floats.
        self._conn.adapters.register_loader("numeric", FloatLoader)
        if read_only:
            self._conn.execute("SET default_transaction_read_only = on")
        self._handler: Callable[[], int] | None = None

    dialect = POSTGRES

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = (), /) -> Cursor:
        values = dict(params) if isinstance(params, Mapping) else list(params)
        with translated_errors(self.url), self._watched():
            return Cursor(self._conn.execute(placeholders(sql), values or None))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Cursor:
        cursor = self._conn.cursor()
        with translated_errors(self.url):
            cursor.executemany(placeholders(sql), [list(row) for row in rows])
        return Cursor(cursor)

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """Write rows into `table` through `COPY ... FROM STDIN` (text format), inside the
        transaction that is open; returns how many. One stream instead of a statement per
        row: see docs/ARCHITECTURE.md, "Two backends", for what it saves."""
        written = 0
        with translated_errors(self.url):
            cursor = self._conn.cursor()
            with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
                    written += 1
        return written

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self._conn.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self._conn.close()

    def set_progress_handler(self, handler: Callable[[], int] | None, steps: int, /) -> None:
        """SQLite's progress handler, the PostgreSQL way: while one is set, each statement
        runs with a watcher thread that asks it every CANCEL_POLL seconds (`steps` has no
        meaning here) and, once it answers non-zero, has the server cancel the statement
        (psycopg's cancel_safe). The statement then fails as an interrupted SQLite one does:
        StoreInterrupted, a StoreError."""
        self._handler = handler

    @contextmanager
    def _watched(self) -> Iterator[None]:
        handler = self._handler
        if handler is None:
            yield
            return
        done = threading.Event()

        def watch() -> None:
            while not done.wait(CANCEL_POLL):
                if handler():
                    self._conn.cancel_safe(timeout=CANCEL_POLL * 20)
                    return

        watcher = threading.Thread(target=watch, name="statement-cancel", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()


@contextmanager
def translated_errors(url: str) -> Iterator[None]:
    """psycopg's errors of a statement, as the Store's errors."""
    import psycopg
    from psycopg import errors

    try:
        yield
    except (errors.LockNotAvailable, errors.SerializationFailure, errors.DeadlockDetected) as e:
        raise StoreBusyError(f"the database is busy ({one_line(e)}); try again") from e
    except errors.QueryCanceled as e:
        said = without_secrets(one_line(e), url)
        raise StoreInterrupted(f"{shown_url(url)}: interrupted ({said})") from e
    except psycopg.Error as error:
        raise StoreError(f"{shown_url(url)}: {without_secrets(one_line(error), url)}") from error


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


@contextmanager
def bulk_writer(url: str) -> Iterator[tuple[Connection, str, set[str]]]:
    """(connection, URL as shown, the database's tables) for a bulk load into `url` (the demo,
    a copy): one transaction holding the writers' lock, committed when the block ends,
    rolled back if it raises; the connection is closed either way."""
    conn = Connection(url, read_only=False)
    try:
        conn.execute("BEGIN")
        conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))
        yield conn, shown_url(url), table_names(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()


def write_schema(conn: Connection, *, with_indexes: bool = True) -> None:
    """The schema's statements and the store's facts (application, creation time, a new
    store_id, the schema version), inside the caller's transaction."""
    from memory_console.store.db import SCHEMA_VERSION
    from memory_console.store.vector_log import new_store_id

    for statement in schema_statements(with_indexes):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO console_meta(key, value) VALUES ('application', ?), "
        "('created_at', ?), ('store_id', ?), ('schema_version', ?)",
        (APPLICATION, str(time.time()), new_store_id(), str(SCHEMA_VERSION)),
    )


def table_names(conn: Connection) -> set[str]:
    """The tables of the connection's current schema."""
    return {
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
    }


def refuse_filled(
    conn: Connection, where: str, tables: set[str], fresh_meta: Sequence[str], what: str
) -> None:
    """A database that holds tables takes a bulk load (`what`: a copy, the demo) only when it
    is an empty store of ours at this schema: no rows but the store facts in `fresh_meta`."""
    from memory_console.store.copy import TABLES, count_rows
    from memory_console.store.db import OUR_TABLES, SCHEMA_VERSION

    if not OUR_TABLES <= tables:
        raise StoreError(
            f"{where}: not empty (tables: {', '.join(sorted(tables)[:5])}); {what} goes into "
            "a new or empty database; nothing was written"
        )
    row = conn.execute("SELECT value FROM console_meta WHERE key = 'application'").fetchone()
    found = conn.execute("SELECT value FROM console_meta WHERE key = 'schema_version'").fetchone()
    if row is None or row[0] != APPLICATION or found is None or int(found[0]) != SCHEMA_VERSION:
        raise StoreError(
            f"{where}: holds another application's or another version's tables; {what} goes "
            "into a new or empty database; nothing was written"
        )
    filled = [table for table in TABLES if table != "console_meta" and count_rows(conn, table)]
    kept = (*fresh_meta, "created_at")
    extra = conn.execute(
        f"SELECT count(*) FROM console_meta WHERE key NOT IN ({', '.join('?' * len(kept))})",
        list(kept),
    ).fetchone()
    if filled or (extra is not None and extra[0]):
        held = ", ".join(f"{count_rows(conn, t):,} {t}" for t in filled) or "store facts"
        raise StoreError(
            f"{where}: not empty ({held}); {what} goes into a new or empty store; "
            "nothing was written"
        )


def set_sequences(conn: Connection) -> None:
    """Move every key's sequence past the largest id its table holds (ids given by a load or
    a copy do not advance it), and the memory, event and run keys past every id their history
    names (store/ids.py), so the next row numbered by the database takes a new id."""
    from memory_console.store import ids
    from memory_console.store.schema import declared_tables

    for table, columns in declared_tables().items():
        key = next(column for column in columns if column.primary_key)
        if key.name not in ("id", "seq") or table in ids.FLOORS:
            continue
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{key.name}'), "
            f"coalesce((SELECT max({key.name}) FROM {table}), 0) + 1, false)"
        )
    ids.raise_postgres_sequences(conn)


def migrate(conn: Connection, where: str, version: int) -> None:
    """Run every forward migration and the version's update in one transaction (PostgreSQL's
    DDL is transactional): the store ends at its old schema or fully migrated. No copy is
    made: the operator backs the database up (pg_dump) before upgrading the program."""
    from memory_console.store.db import SCHEMA_VERSION
    from memory_console.store.migrations import POSTGRES_MIGRATIONS

    conn.execute("BEGIN")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))
        # Read again under the lock: another process opening the store at the same time may
        # have migrated it while this one waited, and its steps must not run twice.
        row = conn.execute("SELECT value FROM console_meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else version
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

"""The connection a PostgreSQL store's Store talks through: a psycopg connection answering
as sqlite3's does (`?` parameters, explicit transactions, the Store's errors).

psycopg is imported only when a PostgreSQL store is opened, so SQLite users never pay for it.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memory_console.store.errors import StoreBusyError, StoreError
from memory_console.store.postgres.dialect import POSTGRES
from memory_console.store.postgres.url import client_url, shown_url, without_secrets

if TYPE_CHECKING:
    import psycopg

APPLICATION = "memory-console"
# How often a cancellable statement's watcher asks whether to cancel (set_progress_handler).
CANCEL_POLL = 0.02


class StoreInterrupted(StoreError):
    """A statement cancelled on the server because its reader asked (a long read's Escape)."""


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

"""Bulk writes and reads the PostgreSQL way, behind its Dialect: rows go in through COPY, a
plan's updates through one UPDATE ... FROM, numbers come back in their binary form, and the
keyword index's new entries are merged once.

See docs/ARCHITECTURE.md, "Two backends", for what each saves over a statement per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, cast

from memory_console.store.connection import Connection
from memory_console.store.records import EVENT_FIELDS, INSERT_COLUMNS, with_evaluated_at

if TYPE_CHECKING:
    import numpy as np


class Copying(Connection, Protocol):
    """A PostgreSQL store's connection (store/postgres/connection.py), or a stand-in answering
    its calls, as a benchmark that times the writes wraps it: no isinstance check."""

    def copy_rows(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> int: ...


# Rows go into PostgreSQL through COPY; False writes them with executemany instead, the path
# benchmarks/bench_pg_import.py measures COPY against (docs/ARCHITECTURE.md, "Two backends").
POSTGRES_COPY = True


def insert_memories(conn: Connection, rows: Sequence[dict[str, Any]]) -> list[int]:
    """Insert checked memory rows (INSERT_COLUMNS, an `id` where given) in the transaction
    that is open, at revision 0; returns their ids in order. Rows without an id take theirs
    from the key's sequence first, so that every row goes in through one COPY."""
    missing = sum(1 for row in rows if row.get("id") is None)
    drawn = iter(
        sorted(
            int(found[0])
            for found in conn.execute(
                "SELECT nextval(pg_get_serial_sequence('memory', 'id')) FROM generate_series(1, ?)",
                (missing,),
            ).fetchall()
        )
        if missing
        else []
    )
    ids = [int(row["id"]) if row.get("id") is not None else next(drawn) for row in rows]
    columns = ("id", *INSERT_COLUMNS, "revision")
    values = (
        (ident, *(row[name] for name in INSERT_COLUMNS), 0)
        for ident, row in zip(ids, rows, strict=True)
    )
    write_rows(conn, "memory", columns, values)
    return ids


def write_events(conn: Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Event rows (EVENT_INSERT's columns) in the transaction that is open."""
    write_rows(conn, "memory_event", EVENT_FIELDS, with_evaluated_at(rows))


def write_rows(
    conn: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    if POSTGRES_COPY:
        # A PostgreSQL store's connection (or a stand-in answering its calls, as a benchmark
        # that times the writes wraps it): no isinstance check.
        cast(Copying, conn).copy_rows(table, columns, rows)
        return
    marks = ", ".join("?" * len(columns))
    conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


# The function giving a number's binary form, and the type it takes, by numpy type.
SEND_FUNCTIONS = {
    "i4": ("int4send", "int4"),
    "i8": ("int8send", "int8"),
    "f8": ("float8send", "float8"),
}


def aggregated_rows(
    conn: Connection,
    where: str,
    params: dict[str, Any],
    names: Sequence[str],
    select: Sequence[str],
    dtype: np.dtype,
) -> np.ndarray | None:
    """PostgreSQL: load_memory_arrays' rows when every column is a number, as one row of
    one bytea per column (each value's binary form, concatenated by string_agg) that numpy
    reads as it is; None when a column has a NULL where a number belongs (an integer column:
    a float column's NULL is sent as NaN, as numpy makes of None), and the caller reads rows
    as tuples.

    Turning each value into a Python object cost most of a load (measured at 1,000,000
    memories: about 4 s for stats' 970,000 active rows as tuples, 1.5 s this way;
    benchmarks/bench_pg_scale.py). The aggregates read the rows in one order, whichever it
    is, so the columns line up; the rows are put in id order here.
    """
    import numpy as np

    parts = []
    for name, expression in zip(names, select, strict=True):
        send, wire = SEND_FUNCTIONS[dtype[name].str[1:]]
        value = f"coalesce(({expression})::float8, 'NaN')" if wire == "float8" else expression
        parts.append(f"string_agg({send}(({value})::{wire}), ''::bytea)")
    found = conn.execute(
        f"SELECT count(*), {', '.join(parts)} FROM memory WHERE {where}",
        params,
    ).fetchone()
    assert found is not None
    count, columns = int(found[0]), found[1:]
    if not count:
        return np.empty(0, dtype)
    sizes = [count * dtype[name].itemsize for name in names]
    if any(len(data) != size for data, size in zip(columns, sizes, strict=True)):
        return None
    table = np.empty(count, dtype)
    for name, data in zip(names, columns, strict=True):
        table[name] = np.frombuffer(data, ">" + dtype[name].str[1:])
    return table[np.argsort(table["id"], kind="stable")]


TEXT_INDEX = "ix_memory_search"
PENDING_LIMIT = "1GB"


@contextmanager
def text_index_merged_once(conn: Connection) -> Iterator[None]:
    """PostgreSQL, inside a write transaction: the keyword index's new entries gathered in
    its pending list and merged into the index once, at the end of the transaction.

    An update writes a new row version with an entry in every index whatever is done, and
    dropping an index would take a lock that stops every reader, so neither is done. A
    memory whose text changes (consolidation's merged memories, restored texts) puts each
    word of it into the GIN index again (memory_search, kept by memory's trigger), and GIN
    merges its pending list into the index each time it passes gin_pending_list_limit (4 MB
    by default): many small merges. Measured at 1,000,000 memories when every update wrote
    its words again (schema 7, the tsvector a column of memory), 348,707 updates took 33 to
    35 s with the default and 26 to 27 s with the whole list merged once (0.7 s for the
    merge; benchmarks/bench_pg_scale.py). Since schema 8 a decay run writes no word, and the
    merge finds its list empty. The merge (gin_clean_pending_list) needs the index's owner,
    as VACUUM does: another role keeps the default and its small merges."""
    owner = conn.execute(
        "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class WHERE oid = to_regclass(?)",
        (TEXT_INDEX,),
    ).fetchone()
    if not owner or not owner[0]:
        yield
        return
    conn.execute(f"SET LOCAL gin_pending_list_limit = '{PENDING_LIMIT}'")
    yield
    # Merged before the commit, so that keyword searches never read a long pending list.
    conn.execute("SELECT gin_clean_pending_list(?::regclass)", (TEXT_INDEX,))
    conn.execute("RESET gin_pending_list_limit")


def update_memories_by_copy(
    conn: Connection,
    fields: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    check_revision: bool,
    bump: bool = True,
) -> int:
    """update_memories on PostgreSQL: the rows go through COPY into a temporary table and
    one UPDATE ... FROM joins it to memory, with the same revision check.

    A statement per row adds a round trip and the statement's own work to each row (measured
    at 1,000,000 memories: 224,613 decayed memories took 46 s by executemany); one UPDATE
    ... FROM costs what a single UPDATE computing the decay in SQL costs, the floor for
    rewriting those rows and their index entries (benchmarks/bench_pg_scale.py). The table
    lives until the transaction ends (ON COMMIT DROP) and is dropped at once after use, so
    a plan's several groups of fields each get their own.
    """
    # A PostgreSQL store's connection, or a stand-in answering its calls (no isinstance check:
    # the live-agent soak times the writes through one).
    pg = cast(Copying, conn)
    names = ", ".join(fields)
    key = "id, revision" if check_revision else "id"
    conn.execute(
        f"CREATE TEMPORARY TABLE maintenance_update ON COMMIT DROP AS "
        f"SELECT {names}, {key} FROM memory WITH NO DATA"
    )
    pg.copy_rows("maintenance_update", [*fields, *key.split(", ")], rows)
    # The planner knows nothing of a new temporary table: without statistics it may walk
    # memory's primary key once per row instead of joining in one pass.
    conn.execute("ANALYZE maintenance_update")
    assignments = ", ".join(f"{name} = t.{name}" for name in fields)
    if bump:  # the memory changed: its revision grows and it is due (Dialect.update_memories)
        assignments += ", revision = m.revision + 1, due_at = NULL"
    where = "m.id = t.id" + (" AND m.revision = t.revision" if check_revision else "")
    cursor = conn.execute(
        f"UPDATE memory AS m SET {assignments} FROM maintenance_update AS t WHERE {where}"
    )
    conn.execute("DROP TABLE maintenance_update")
    return int(cursor.rowcount)

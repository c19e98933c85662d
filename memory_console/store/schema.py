"""The columns of the SQLModel tables, read from their declaration without importing SQLModel,
and the schema's version and tables.

store/tables.py is the one declaration of the schema. Importing it costs SQLModel (a few
hundred milliseconds), which only schema creation pays; everyday commands need just the
column names and defaults, so this module reads them from the declaration's source text.
A test compares what it reads with SQLModel's own metadata, column by column.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TABLES_SOURCE = Path(__file__).with_name("tables.py")
# The schema this program writes and reads, on both backends (store/migrations.py and
# store/postgres/migrations.py take older stores to it).
SCHEMA_VERSION = 11
# The tables every store holds (the text index's are each backend's own).
OUR_TABLES = {
    "memory",
    "memory_event",
    "maintenance_run",
    "embedding",
    "console_meta",
    "store_setting",
    "store_setting_change",
    "erasure",
    "vector_log",
}


class SchemaSourceError(Exception):
    """tables.py declares a column in a form this reader does not know (add it here)."""


class Required:
    """The default of a column that has none: every row must give it."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = Required()


@dataclass(frozen=True, slots=True)
class Column:
    """One column as the table declares it."""

    name: str  # the database name (sa_column_kwargs may rename the Python field)
    type: str  # the annotation's base type: str, int, float, bool or bytes
    nullable: bool  # a primary key never is, whatever its annotation says
    default: Any  # REQUIRED when the declaration gives none
    primary_key: bool = False


def read_tables(source: str) -> dict[str, tuple[Column, ...]]:
    """table name -> its columns in table order, from the source of a module of SQLModel
    classes. Fields of a base class come first, as SQLModel orders them."""
    fields_of: dict[str, tuple[Column, ...]] = {}
    tables: dict[str, tuple[Column, ...]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        inherited = [
            column
            for base in node.bases
            if isinstance(base, ast.Name)
            for column in fields_of.get(base.id, ())
        ]
        own, table_name = class_body(node)
        fields_of[node.name] = (*inherited, *own)
        is_table = any(
            k.arg == "table" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in node.keywords
        )
        if is_table:
            if table_name is None:
                raise SchemaSourceError(f"{node.name}: a table without __tablename__")
            tables[table_name] = fields_of[node.name]
    return tables


def class_body(node: ast.ClassDef) -> tuple[list[Column], str | None]:
    """The columns a class declares itself, and its __tablename__ if it sets one."""
    columns: list[Column] = []
    table_name = None
    for statement in node.body:
        if isinstance(statement, ast.Assign):
            target = statement.targets[0]
            if isinstance(target, ast.Name) and target.id == "__tablename__":
                table_name = ast.literal_eval(statement.value)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            columns.append(read_column(node.name, statement.target.id, statement))
    return columns, table_name


def read_column(owner: str, field: str, statement: ast.AnnAssign) -> Column:
    where = f"{owner}.{field}"
    parts = [part.strip() for part in ast.unparse(statement.annotation).split("|")]
    nullable = "None" in parts
    base = [part for part in parts if part != "None"]
    if len(base) != 1 or base[0] not in ("str", "int", "float", "bool", "bytes"):
        raise SchemaSourceError(f"{where}: unknown column type {ast.unparse(statement.annotation)}")
    default: Any = REQUIRED
    name = field
    primary_key = False
    value = statement.value
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "Field"
    ):
        if value.args:
            raise SchemaSourceError(f"{where}: Field() with positional arguments")
        for keyword in value.keywords:
            if keyword.arg == "default":
                default = ast.literal_eval(keyword.value)
            elif keyword.arg == "primary_key":
                primary_key = bool(ast.literal_eval(keyword.value))
            elif keyword.arg == "sa_column_kwargs":
                extra = ast.literal_eval(keyword.value)
                if set(extra) - {"name"}:
                    raise SchemaSourceError(f"{where}: sa_column_kwargs other than name")
                name = extra.get("name", name)
            elif keyword.arg not in ("index", "description", "ge", "le"):
                raise SchemaSourceError(f"{where}: Field({keyword.arg}=...) is not read here")
    elif value is not None:
        default = ast.literal_eval(value)
    return Column(name, base[0], nullable and not primary_key, default, primary_key)


@functools.cache
def declared_tables() -> dict[str, tuple[Column, ...]]:
    """The tables store/tables.py declares."""
    return read_tables(TABLES_SOURCE.read_text(encoding="utf-8"))


def columns(table: str) -> tuple[Column, ...]:
    """The columns of one table, in table order."""
    return declared_tables()[table]


def column_names(table: str, *, key_first: bool = False) -> tuple[str, ...]:
    """The column names of one table in table order; with key_first the primary key leads,
    as the records and the SELECTs carry it."""
    found = columns(table)
    if not key_first:
        return tuple(column.name for column in found)
    keys = [column.name for column in found if column.primary_key]
    return (*keys, *(column.name for column in found if not column.primary_key))


def defaults(table: str) -> dict[str, Any]:
    """Column name -> the value a row takes when none is given, as the database holds it
    (a bool as 0 or 1); columns without a default are left out."""
    return {
        column.name: int(column.default) if isinstance(column.default, bool) else column.default
        for column in columns(table)
        if column.default is not REQUIRED and not column.primary_key
    }

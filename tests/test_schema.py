"""One schema source: every column list and default the core uses is read from the SQLModel
tables (store/tables.py), and the reader agrees with SQLModel's own metadata."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

from memory_console.store import bulk, schema
from memory_console.store.records import (
    EVENT_COLUMNS,
    EVENT_FIELDS,
    FLAG_COLUMNS,
    INTERNAL_COLUMNS,
    JSON_COLUMNS,
    MEMORY_COLUMNS,
    EventRecord,
    MemoryRecord,
)
from memory_console.store.runs import RUN_FIELDS
from memory_console.store.validate import DEFAULTS, INSERT_COLUMNS, complete_memory
from tests.helpers import NOW

# maintenance/__init__ binds `undo` to the function, so the module is imported by its name.
undo = importlib.import_module("memory_console.maintenance.undo")
PYTHON_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "bytes": bytes}


def test_the_reader_sees_what_sqlmodel_declares() -> None:
    from sqlmodel import AutoString, SQLModel

    from memory_console.store import tables  # noqa: F401  (registers the tables)

    declared = schema.declared_tables()
    assert set(declared) == set(SQLModel.metadata.tables)
    for name, table in SQLModel.metadata.tables.items():
        read = declared[name]
        assert [c.name for c in read] == [c.name for c in table.columns], name
        for column, sa_column in zip(read, table.columns, strict=True):
            where = f"{name}.{column.name}"
            assert column.primary_key == sa_column.primary_key, where
            assert column.nullable == sa_column.nullable, where
            kind = sa_column.type
            assert PYTHON_TYPES[column.type] is (
                str if isinstance(kind, AutoString) else kind.python_type
            ), where
            if sa_column.default is None:
                assert column.default is schema.REQUIRED or column.default is None, where
            else:
                assert column.default == sa_column.default.arg, where


def test_every_derived_list_is_the_table_minus_its_stated_exclusions() -> None:
    memory = schema.column_names("memory")
    assert INTERNAL_COLUMNS == ("due_at",) and set(INTERNAL_COLUMNS) <= set(memory)
    assert MEMORY_COLUMNS == ("id", *(n for n in memory if n not in ("id", *INTERNAL_COLUMNS)))
    assert bulk.WRITABLE_COLUMNS == set(MEMORY_COLUMNS) - {"id", "revision"}
    assert INSERT_COLUMNS == tuple(n for n in MEMORY_COLUMNS if n not in ("id", "revision"))
    assert FLAG_COLUMNS == ("is_protected",)
    assert undo.PLAIN_FIELDS == set(INSERT_COLUMNS) - set(JSON_COLUMNS) - set(FLAG_COLUMNS)
    assert [f.name for f in dataclasses.fields(MemoryRecord)] == list(MEMORY_COLUMNS)
    assert [f.name for f in dataclasses.fields(EventRecord)] == list(EVENT_COLUMNS)
    assert EVENT_COLUMNS == schema.column_names("memory_event")
    assert EVENT_FIELDS == EVENT_COLUMNS[1:]
    assert RUN_FIELDS == schema.column_names("maintenance_run")
    types = {c.name: c.type for c in schema.columns("memory")}
    loaded = dict(bulk.BASE_COLUMNS) | bulk.EXTRA_COLUMNS
    for name, dtype in loaded.items():
        if name != "code":
            assert dtype == bulk.NUMPY_TYPES[types[name]], name


def test_a_new_memory_takes_the_tables_defaults() -> None:
    table = schema.defaults("memory")
    assert DEFAULTS == {name: table[name] for name in INSERT_COLUMNS if name in table}
    row = complete_memory({"content": "Likes tea. Every day."}, NOW)
    assert set(row) == set(INSERT_COLUMNS)
    derived = {"title", "confidence", "base_confidence", "created_at", "updated_at"}
    for name in set(INSERT_COLUMNS) - derived - {"content"}:
        assert row[name] == table[name], name
    assert row["title"] == "Likes tea." and row["created_at"] == row["updated_at"] == NOW
    assert row["confidence"] == row["base_confidence"] == table["confidence"]


def test_a_column_added_to_the_tables_reaches_every_derived_list(tmp_path: Path) -> None:
    source = Path(schema.TABLES_SOURCE).read_text(encoding="utf-8")
    marker = "    external_id: str | None = Field(default=None)  # indexed: EXTRA_INDEXES\n"
    assert marker in source
    changed = tmp_path / "tables.py"
    changed.write_text(
        source.replace(marker, marker + '    mood: str = Field(default="calm", index=True)\n'),
        encoding="utf-8",
    )
    probe = textwrap.dedent(
        f"""
        import importlib.util, sys
        from pathlib import Path
        # The schema reader is loaded and pointed at the changed tables before the store
        # package (and everything that derives lists from it) is imported.
        spec = importlib.util.spec_from_file_location(
            "memory_console.store.schema", {str(Path(schema.__file__))!r}
        )
        reader = importlib.util.module_from_spec(spec)
        sys.modules["memory_console.store.schema"] = reader
        spec.loader.exec_module(reader)
        reader.TABLES_SOURCE = Path({str(changed)!r})
        undo = importlib.import_module("memory_console.maintenance.undo")
        from memory_console.store import bulk_load
        from memory_console.store.records import MEMORY_COLUMNS
        from memory_console.store.validate import DEFAULTS, INSERT_COLUMNS, complete_memory
        at = MEMORY_COLUMNS.index("mood")
        assert MEMORY_COLUMNS[at - 1 : at + 2] == ("external_id", "mood", "revision")
        assert "mood" in INSERT_COLUMNS and "mood" in undo.PLAIN_FIELDS
        assert DEFAULTS["mood"] == "calm"
        assert complete_memory({{"content": "x"}}, 0.0)["mood"] == "calm"
        assert "mood" in bulk_load.MEMORY_INSERT
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_the_reader_refuses_a_declaration_it_cannot_read() -> None:
    import pytest

    source = textwrap.dedent(
        """
        class Thing(SQLModel, table=True):
            __tablename__ = "thing"
            tags: list[str] = Field(default_factory=list)
        """
    )
    with pytest.raises(schema.SchemaSourceError, match="Thing.tags"):
        schema.read_tables(source)
    factory = source.replace("list[str]", "str")
    with pytest.raises(schema.SchemaSourceError, match="default_factory"):
        schema.read_tables(factory)

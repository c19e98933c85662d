"""The store is the one door: no module outside memory_console/store/ holds the connection,
runs a statement or writes SQL."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import memory_console

PACKAGE = Path(memory_console.__file__).parent
# Attributes of a Store (or its connection) that only modules under store/ may touch.
PRIVATE = {"connection", "_conn", "_query", "_lock", "lock"}
# Statements run on a connection: only modules under store/ have one.
STATEMENTS = {"execute", "executemany", "executescript", "query"}
# A Store is never `self` outside store/: Textual's DOM query is `self.query(...)`, and
# classes such as the vector index keep their own `self._lock`.
OWN = {"query", "lock", "_lock"}
# Known exceptions, as (module, attribute), each with why: none today.
ALLOWED: set[tuple[str, str]] = set()
SQL = re.compile(
    r"\bSELECT\b.*\bFROM\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b"
    r"|\bDELETE\s+FROM\b|\b(CREATE|DROP|ALTER)\s+(TEMP\s+)?(TABLE|INDEX|TRIGGER|VIEW)\b"
    r"|\bPRAGMA\s+\w+|\bATTACH\s+DATABASE\b|\bBEGIN\s+(IMMEDIATE|EXCLUSIVE)\b",
    re.IGNORECASE | re.DOTALL,
)


def breaches(source: str, name: str) -> list[str]:
    """What in one module's source goes around the Store: raw attributes, statements run,
    SQL in string literals (f-strings are read with their holes as {})."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            receiver = ast.unparse(node.value)
            own = node.attr in OWN and receiver == "self"
            if node.attr in PRIVATE and not own and (name, node.attr) not in ALLOWED:
                found.append(f"{name}:{node.lineno}: {receiver}.{node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, ast.unparse(node.func.value)
            if method in STATEMENTS and not (method in OWN and receiver == "self"):
                found.append(f"{name}:{node.lineno}: {receiver}.{method}()")
        text = None
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        if text is not None and SQL.search(text):
            found.append(f"{name}:{node.lineno}: SQL {text[:60]!r}")
    return found


def outside_store() -> list[Path]:
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "store"
    ]


def test_no_module_outside_the_store_goes_around_it() -> None:
    modules = outside_store()
    assert len(modules) > 50  # the scan sees the package
    found = [
        breach
        for path in modules
        for breach in breaches(
            path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix()
        )
    ]
    assert found == []


def test_the_scan_finds_each_way_around_the_store() -> None:
    sample = """
rows = store.connection.fetchall()
store._conn.close()
store._query("x")
other.query("y")
with self.store.lock:
    pass
conn.executemany(statement, rows)
text = f"UPDATE memory SET {name} = ? WHERE id = ?"
doc = "one INSERT INTO memory_event for each row"
fine = "UPDATE names its memory by memory_id; SELECT a memory"
widget = self.query(Button)
with self._lock:
    pass
"""
    lines = {int(breach.split(":")[1]) for breach in breaches(sample, "sample.py")}
    assert lines == set(range(2, 11)) - {7}


# What store/ may import of the project: no arrow runs back up to the layers above it.
STORE_IMPORTS = {"store", "policies", "files", "literal", "timeutil", "lazy"}


def project_imports(source: str) -> set[str]:
    """The top-level packages and modules of memory_console a module imports, at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "memory_console" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_the_store_imports_nothing_above_it() -> None:
    upward = {
        str(path.relative_to(PACKAGE)): sorted(project_imports(path.read_text()) - STORE_IMPORTS)
        for path in sorted((PACKAGE / "store").rglob("*.py"))
    }
    assert {name: found for name, found in upward.items() if found} == {}
    assert project_imports("def f():\n    from memory_console.ingest.jsonl import x\n") == {
        "ingest"
    }

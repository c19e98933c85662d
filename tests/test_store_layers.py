"""store/ in layers: no module of memory_console/store/ imports, through any chain of imports,
a module that imports it back (at the top, inside a function or only for type checking), and
PostgreSQL's code (psycopg, its SQL) lives in store/postgres/ alone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import memory_console
from tests.helpers import import_cycles

PACKAGE = Path(memory_console.__file__).parent
STORE = PACKAGE / "store"
POSTGRES = STORE / "postgres"


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package `package` whose folder is `root`, by its dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> set[str]:
    """The dotted names an import statement imports: `from a.b import c` imports a.b.c when
    that is a module, else a.b (c is one of its names)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        anchor = importer.split(".") if is_package else importer.split(".")[:-1]
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, *([base] if base else [])])
    return {f"{base}.{alias.name}" for alias in node.names} | {base}


Edges = dict[str, dict[str, int]]


def import_graph(root: Path, package: str) -> Edges:
    """module -> {module it imports: the line of the first such import} for every module of
    the package at `root`, read from the source: imports at any depth (inside functions and
    under TYPE_CHECKING too), and the packages a module of a subpackage runs first (importing
    store.postgres.url runs store/postgres/__init__.py), except the importer's own."""
    files = module_names(root, package)
    packages = {name for name, path in files.items() if path.name == "__init__.py"}
    graph: Edges = {}
    for name, path in files.items():
        edges = graph.setdefault(name, {})
        own = {".".join(name.split(".")[:end]) for end in range(1, name.count(".") + 2)}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = imported(node, name, name in packages)
            # A from-import's module itself only when no imported name is a module of it.
            targets = {
                target
                for target in names
                if target in files
                and not any(other.startswith(f"{target}.") for other in names if other in files)
            }
            for target in sorted(targets):
                parts = target.split(".")
                runs = {".".join(parts[:end]) for end in range(1, len(parts))} & packages
                for reached in (target, *sorted(runs - own)):
                    if reached != name:
                        edges.setdefault(reached, node.lineno)
    return graph


def described(cycle: list[str], graph: Edges) -> str:
    return (
        " -> ".join(
            f"{module} (line {graph[module][target]})"
            for module, target in zip(cycle, cycle[1:], strict=False)
        )
        + f" -> {cycle[-1]}"
    )


def test_no_module_of_the_store_imports_itself_back() -> None:
    graph = import_graph(STORE, "memory_console.store")
    assert len(graph) > 40 and "memory_console.store.postgres.url" in graph  # it sees store/
    found = [
        f"a cycle of {len(set(cycle))} modules: {described(cycle, graph)}"
        for cycle in import_cycles(graph)
    ]
    assert found == []


def write(root: Path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root


def test_the_graph_finds_every_kind_of_import_cycle(tmp_path: Path) -> None:
    """A cycle closed by an import inside a function, one by a type-only import, one through
    a subpackage's __init__ (which a module of the subpackage runs first), and a from-import
    of a name from a package that is no module: each found and named."""
    root = write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a.py": "from pkg import b\n",
            "b.py": "def f():\n    from pkg.a import x\n",
            "c.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.d import D\n",
            "d.py": "import pkg.c\n",
            "e.py": "from pkg.sub.leaf import y\n",
            "sub/__init__.py": "from pkg.sub.leaf import y\nfrom pkg import e\n",
            "sub/leaf.py": "from . import other\n",
            "sub/other.py": "from pkg.sub import leaf\n",
            "f.py": "from pkg import g\n",
            "g.py": "from pkg.sub import y\n",
        },
    )
    graph = import_graph(root, "pkg")
    assert graph["pkg.a"] == {"pkg.b": 1}
    assert graph["pkg.b"] == {"pkg.a": 2}
    assert graph["pkg.c"] == {"pkg.d": 3}
    assert graph["pkg.e"] == {"pkg.sub.leaf": 1, "pkg.sub": 1}
    assert graph["pkg.sub.leaf"] == {"pkg.sub.other": 1}  # its own package is not counted
    assert graph["pkg.g"] == {"pkg.sub": 1}  # y is a name of pkg.sub, not a module
    found = {" -> ".join(cycle) for cycle in import_cycles(graph)}
    assert found == {
        "pkg.a -> pkg.b -> pkg.a",
        "pkg.c -> pkg.d -> pkg.c",
        "pkg.e -> pkg.sub -> pkg.e",
        "pkg.sub.leaf -> pkg.sub.other -> pkg.sub.leaf",
    }
    assert described(["pkg.a", "pkg.b", "pkg.a"], graph) == (
        "pkg.a (line 1) -> pkg.b (line 2) -> pkg.a"
    )


# SQL only PostgreSQL speaks: its functions and catalogs, casts, JSON and text-search types,
# COPY, VACUUM, CHECKPOINT, DISTINCT ON, pgvector's distance.
POSTGRES_SQL = re.compile(
    r"\bpg_\w+|::[A-Za-z_]|\bto_regclass\b|\b(string_agg|setval|nextval|unnest|generate_series"
    r"|to_tsvector|plainto_tsquery|websearch_to_tsquery|ts_rank|gin_clean_pending_list)\s*\("
    r"|\bCOPY\s+\w+\s*\(|\bIS\s+JSON\b|\bjsonb\b|\btsvector\b|\bVACUUM\b|\bCHECKPOINT\b"
    r"|\bDISTINCT\s+ON\b|<=>|\binformation_schema\b|\bhnsw\b|\bON\s+COMMIT\s+DROP\b",
    re.IGNORECASE,
)


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module and its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def postgres_code(source: str, name: str) -> list[str]:
    """psycopg imported, and PostgreSQL's SQL in string literals (docstrings aside; f-strings
    read with their holes as {})."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules = [node.module]
            found += [
                f"{name}:{node.lineno}: imports {module}"
                for module in modules
                if module.split(".")[0] == "psycopg"
            ]
    skipped = docstrings(tree)
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
            )
            skipped.update(id(part) for part in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = None if id(node) in skipped else node.value
        if text is not None and POSTGRES_SQL.search(text):
            found.append(f"{name}:{node.lineno}: PostgreSQL's SQL {text[:60]!r}")
    return found


def test_postgresql_code_lives_in_store_postgres_alone() -> None:
    """psycopg is imported by store/postgres/ alone, within memory_console/; and no module
    of store/ outside store/postgres/ holds PostgreSQL's SQL (outside store/, no module holds
    SQL at all: tests/test_store_door.py)."""
    outside = [path for path in sorted(PACKAGE.rglob("*.py")) if POSTGRES not in path.parents]
    assert len(outside) > 100 and STORE / "store.py" in outside  # the scan sees the package
    found = [
        finding
        for path in outside
        for finding in postgres_code(
            path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix()
        )
        if POSTGRES.parent in path.parents or "imports psycopg" in finding
    ]
    assert found == []
    inside = [
        finding
        for path in sorted(POSTGRES.rglob("*.py"))
        for finding in postgres_code(path.read_text(encoding="utf-8"), path.name)
    ]
    assert any("imports psycopg" in finding for finding in inside)  # the scan sees psycopg
    assert any("PostgreSQL's SQL" in finding for finding in inside)


def test_the_scan_finds_psycopg_and_postgresql_sql() -> None:
    sample = '''
"""A docstring may say pg_dump, COPY memory (id) and VACUUM: it is no code."""
import psycopg
from psycopg import errors
import psycopg.pq as pq
sql = "SELECT pg_current_xact_id()::text"
literal = f"INSERT INTO embedding VALUES ({value}::vector)"
ranked = "ORDER BY e.embedding <=> ?"
fine = "SELECT id FROM memory WHERE id IN (?)"
message = "the database is busy; try again"
'''
    lines = {int(finding.split(":")[1]) for finding in postgres_code(sample, "sample.py")}
    assert lines == {3, 4, 5, 6, 7, 8}

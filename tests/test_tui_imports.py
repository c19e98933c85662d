"""tui/ only draws: from store/ it imports the records, filters and errors the Store API speaks
in, never the store's internals (SQL helpers, readers, statistics), which the core wraps."""

from __future__ import annotations

import ast
from pathlib import Path

import memory_console

TUI = Path(memory_console.__file__).parent / "tui"

# What a screen may take from store/: the Store itself (the one door: its methods are the
# API), the records, filters and settings its methods take and return, the errors they raise (a
# screen must tell a refused change from a failure), and the vocabularies that fill its
# drop-downs. Everything else in store/ is reached through maintenance/, embed/ or the Store.
ALLOWED: dict[str, frozenset[str]] = {
    "memory_console.store": frozenset(
        {
            "Store",
            "MemoryRecord",
            "EventRecord",
            "MemoryFilter",
            "Cursor",
            "Page",
            "PlaceCount",  # the topics tree's counts
            "ChangeResult",
            "StoreError",
            "StoreBusyError",
            "CommittedError",
            "ValidationError",
            "NotFoundError",
            "ReadOnlyError",
            "StoreSettings",
            # What an erasure would take in and what it did: plain records the purge
            # dialog and its notification read.
            "ErasureScope",
            "PurgeResult",
        }
    ),
    "memory_console.store.records": frozenset(
        {"MemoryRecord", "EventRecord", "MemoryFilter", "Cursor", "Page", "ChangeResult"}
    ),
}
VOCABULARY = "memory_console.store.vocab"  # constants only (UPPER_CASE names)


def store_imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of every import from memory_console.store in one module."""
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "memory_console" and any(a.name == "store" for a in node.names):
                found.append((node.lineno, "memory_console", "store"))
            elif node.module.startswith("memory_console.store"):
                found.extend((node.lineno, node.module, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            found.extend(
                (node.lineno, a.name, "*")
                for a in node.names
                if a.name.startswith("memory_console.store")
            )
    return found


def refused(module: str, name: str) -> bool:
    if module == VOCABULARY:
        return not name.isupper()
    return name not in ALLOWED.get(module, frozenset())


def test_tui_imports_only_records_filters_and_errors_from_the_store() -> None:
    modules = sorted(TUI.rglob("*.py"))
    assert len(modules) > 30  # the walk found the console
    wrong = [
        f"{path.relative_to(TUI.parent)}:{line}: {module} {name}"
        for path in modules
        for line, module, name in store_imports(path)
        if refused(module, name)
    ]
    assert not wrong, "tui/ reaches into the store:\n" + "\n".join(wrong)


def test_the_check_sees_an_internal_import(tmp_path: Path) -> None:
    """The scan is not blind: each way of reaching an internal is caught."""
    module = tmp_path / "screen.py"
    module.write_text(
        "from memory_console.store.readers import private_reader\n"
        "from memory_console.store import bulk, MemoryRecord\n"
        "import memory_console.store.db\n"
        "from memory_console import store\n"
        "from memory_console.store.vocab import TOPICS, topic_of\n"
        "def later():\n"
        "    from memory_console.store.stats import store_stats\n"
    )
    imports = store_imports(module)
    assert [name for _, module_name, name in imports if refused(module_name, name)] == [
        "private_reader",
        "bulk",
        "*",
        "store",
        "topic_of",
        "store_stats",
    ]

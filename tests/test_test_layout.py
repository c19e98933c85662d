"""The tests and the benchmarks do not import each other: what both need (harnesses, the
fixed clock, labelled data readers) is in tests/harness/, which imports neither."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_tests_never_import_the_benchmarks() -> None:
    offending = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for name in imported_modules(path)
        if name.split(".")[0] == "benchmarks"
    }
    assert offending == set()


def test_benchmarks_take_from_the_tests_only_their_shared_harness() -> None:
    offending = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "benchmarks").rglob("*.py"))
        for name in imported_modules(path)
        if name.split(".")[0] == "tests" and not name.startswith("tests.harness")
    }
    assert offending == set()


def test_the_harness_imports_no_test_module() -> None:
    offending = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "tests" / "harness").rglob("*.py"))
        for name in imported_modules(path)
        if name.split(".")[0] in ("tests", "benchmarks") and not name.startswith("tests.harness")
    }
    assert offending == set()

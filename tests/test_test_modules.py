"""The tests' own layout: no module under tests/ imports a test module (shared helpers live in
tests/helpers.py and fixtures in tests/conftest.py)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> list[str]:
    """Every module `path` imports, at any depth (in functions too), as written."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.append(base)
            # `from tests import test_x` names the module in the alias
            found.extend(f"{base}.{alias.name}" for alias in node.names)
    return found


def is_test_module(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def test_no_module_under_tests_imports_a_test_module() -> None:
    offenders = {
        path.name: bad
        for path in sorted(TESTS.glob("*.py"))
        if (bad := [name for name in imported_modules(path) if is_test_module(name)])
    }
    assert offenders == {}


def test_the_check_sees_each_way_of_importing_a_test_module(tmp_path: Path) -> None:
    for line in (
        "from tests.test_cli import run",
        "from tests import test_cli as support",
        "from test_cli import run",
        "import tests.test_cli",
        "from .test_cli import run",
        "from tests.conftest import NOW",
        "def f():\n    from tests.test_cli import run",
    ):
        source = tmp_path / "sample.py"
        source.write_text(line + "\n")
        assert any(is_test_module(name) for name in imported_modules(source)), line
    source.write_text("from tests.helpers import NOW\nimport pytest\n")
    assert not any(is_test_module(name) for name in imported_modules(source))

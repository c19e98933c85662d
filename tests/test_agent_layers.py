"""The agent side's layers: no import cycle among the modules of memory_console/agent/, its
rules import nothing of the agent above them, and import/export (ingest/) reads only the two
rules that describe a text, never the agent's decisions, actions or server."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import memory_console
from tests.helpers import import_cycles

PACKAGE = Path(memory_console.__file__).parent
AGENT = "memory_console.agent"
RULES = "memory_console.agent.rules"

# What ingest/ may import of agent/, and why: an imported memory gets the title, keywords and
# topic (rules/describe.py) and the memory type (rules/classify.py) that a memory the agent
# remembers gets, so that both read, rank and decay alike. Both are pure functions over text
# that import nothing else of agent/ (checked below), so an import never loads the agent's
# decisions, its writes or the MCP server.
INGEST_MAY_IMPORT = frozenset({f"{RULES}.describe", f"{RULES}.classify"})


def module_name(path: Path, root: Path) -> str:
    """The dotted name of a module file under `root` (the folder holding the top package)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str, modules: Iterable[str]) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, at any depth: in functions and under
    `if TYPE_CHECKING:` too. `from a import b` names a.b when that is one of `modules`
    (a submodule), else a; a relative import is resolved against the module's package."""
    known = set(modules)
    is_package = path.name == "__init__.py"
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".")
                package = package if is_package else package[:-1]
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.append((node.lineno, child if child in known else base))
    return found


def import_graph(root: Path, top: str) -> dict[str, set[str]]:
    """Module -> the modules of package `top` (under `root`) it imports. Importing a module
    first runs its packages' __init__: an import of top.a.b also reaches top.a (unless that
    package is the importer's own, which Python has already begun)."""
    files = {module_name(p, root): p for p in sorted((root / top.replace(".", "/")).rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        for _, target in imports_of(path, name, files):
            parts = target.split(".")
            reached = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
            graph[name].update(t for t in reached if t in files and t not in own and t != name)
    return graph


def agent_graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE.parent, AGENT)


def test_the_agent_modules_import_one_another_without_a_cycle() -> None:
    graph = agent_graph()
    assert {f"{AGENT}.api", f"{AGENT}.decide", f"{AGENT}.act", f"{RULES}.remember"} <= set(graph)
    found = import_cycles(graph)
    assert found == [], "import cycles in agent/:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_rules_import_nothing_of_the_agent_above_them() -> None:
    """rules/ are pure functions over text: the facade, the decisions, the writes, the user's
    requests and the MCP server all read them, never the other way."""
    upward = {
        name: sorted(t for t in targets if not t.startswith(RULES) and t != AGENT)
        for name, targets in agent_graph().items()
        if name.startswith(RULES)
    }
    assert {name: found for name, found in upward.items() if found} == {}


def agent_imports_of_ingest() -> list[str]:
    """FILE:LINE: module of every import of agent/ under ingest/ that INGEST_MAY_IMPORT lacks."""
    root = PACKAGE.parent
    modules = {module_name(p, root) for p in PACKAGE.rglob("*.py")}
    wrong = []
    for path in sorted((PACKAGE / "ingest").rglob("*.py")):
        for line, target in imports_of(path, module_name(path, root), modules):
            if (target == AGENT or target.startswith(AGENT + ".")) and (
                target not in INGEST_MAY_IMPORT
            ):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line}: {target}")
    return wrong


def test_import_and_export_read_only_the_rules_that_describe_a_text() -> None:
    assert agent_imports_of_ingest() == []
    # What ingest/ reads imports nothing else of agent/: no decision comes with it.
    graph = agent_graph()
    assert {name: sorted(graph[name]) for name in INGEST_MAY_IMPORT} == {
        name: [] for name in INGEST_MAY_IMPORT
    }
    assert (PACKAGE / "ingest" / "jsonl.py").is_file()  # the walk reads import and export
    assert not (PACKAGE / "ingest" / "remember.py").exists()


def test_the_checks_see_a_cycle_and_a_forbidden_import(tmp_path: Path) -> None:
    """The checks are not blind: a cycle through an import inside a function, or through a
    package's __init__, is found and named; an import of the agent's decisions is caught."""
    top = tmp_path / "pkg"
    (top / "sub").mkdir(parents=True)
    (top / "__init__.py").write_text("")
    (top / "a.py").write_text("from pkg import b\n")
    (top / "b.py").write_text("def later():\n    from pkg.sub import c\n")
    (top / "sub" / "__init__.py").write_text("from pkg.sub import d\n")
    (top / "sub" / "c.py").write_text("")
    (top / "sub" / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import a\n"
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.b"] == {"pkg.sub", "pkg.sub.c"}
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.sub", "pkg.sub.d", "pkg.a"]]
    (top / "sub" / "d.py").write_text("import os\n")
    assert import_cycles(import_graph(tmp_path, "pkg")) == []

    sample = tmp_path / "reader.py"
    sample.write_text(
        "from memory_console.agent.rules.describe import make_title\n"
        "def later():\n"
        "    from memory_console.agent import decide\n"
        "    import memory_console.agent.rules.remember\n"
    )
    modules = {f"{AGENT}.decide", f"{RULES}.describe", f"{RULES}.remember"}
    found = [target for _, target in imports_of(sample, "memory_console.ingest.reader", modules)]
    assert [t for t in found if t not in INGEST_MAY_IMPORT] == [
        f"{AGENT}.decide",
        f"{RULES}.remember",
    ]

"""What the quick commands import: --version and --help stay light, the int8 scan needs no onnx."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import keep_variant_choice

REPOSITORY = Path(__file__).resolve().parent.parent
HEAVY = ("sqlmodel", "textual", "onnxruntime", "onnx")


def imported_by(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running the CLI with argv."""
    code = (
        "import sys, json, contextlib, io\n"
        "from memory_console.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({list(argv)!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    environment = {**os.environ, **(env or {}), "PYTHONPATH": str(REPOSITORY)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_version_imports_no_numpy_or_heavy_module() -> None:
    modules = imported_by("--version")
    assert not {"numpy", *HEAVY} & modules


def test_help_imports_no_numpy_or_heavy_module() -> None:
    assert not {"numpy", *HEAVY} & imported_by("--help")
    assert not {"numpy", *HEAVY} & imported_by("list", "--help")


def test_a_keyword_search_imports_no_numpy_or_heavy_module(tmp_path: Path) -> None:
    """A keyword search in a fresh process reads the store and prints hits (the secrets in
    them masked, the confidence in words): none of that needs numpy."""
    from memory_console.store import Store

    db = tmp_path / "memories.db"
    with Store(db) as store:
        store.add_many(
            [
                {"content": "Takes her coffee black", "owner": "alice"},
                {"content": "The router password is hunter22", "owner": "alice"},
            ]
        )
    for output in ([], ["--json"]):
        modules = imported_by("search", "coffee", "--mode", "keyword", "--db", str(db), *output)
        assert "memory_console.store.store" in modules  # the search ran
        assert not {"numpy", *HEAVY} & modules


def test_help_names_every_command_and_a_maintenance_command_gets_its_options() -> None:
    """The top-level help names the maintenance commands without building their options;
    asked for, a maintenance command's help lists every pass and its parameters."""
    from memory_console.cli import build_parser

    full = build_parser()
    light = build_parser(["--help"])
    assert light.format_help() == full.format_help()
    maintain = subprocess.run(
        [sys.executable, "-m", "memory_console.cli", "maintain", "--help"],
        env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--passes" in maintain and "consolidate" in maintain and "--floor" in maintain


def command_modules(*argv: str) -> set[str]:
    return {
        name.rsplit(".", 1)[1]
        for name in imported_by(*argv)
        if name.startswith("memory_console.commands.") and name.endswith("_commands")
    }


def test_a_command_line_imports_the_module_of_its_command_only() -> None:
    """One table names every command; a line builds (and imports) the module of the command
    it runs, wherever the program's options put it, and `--help` imports none."""
    from memory_console.cli import COMMANDS, build_parser, invoked_command

    assert command_modules("--help") == set()
    assert command_modules("list", "--help") == {"store_commands"}
    assert command_modules("--db", "search", "--now", "2026-01-01", "undo", "--help") == {
        "maintenance_commands"
    }
    assert invoked_command(["--db", "search", "-v", "undo", "7"]) == "undo"
    assert invoked_command(["search", "undo"]) == "search"
    assert invoked_command(["--db"]) is None
    full = build_parser()
    for name, (module, _) in COMMANDS.items():
        one = build_parser([name, "--help"])
        (commands,) = [a for a in one._actions if isinstance(a, argparse._SubParsersAction)]
        (every,) = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
        assert commands.choices[name].format_help() == every.choices[name].format_help()
        assert commands.choices[name].get_default("handler").__module__.endswith(module)
    assert [a.help for a in every._choices_actions] == [s for _, s in COMMANDS.values()]


def test_keyword_search_imports_no_onnx(tmp_path: Path) -> None:
    db = str(tmp_path / "tiny.db")
    imported_by("--db", db, "demo", "--count", "20")
    assert "onnx" not in imported_by("--db", db, "search", "--mode", "keyword", "editor")


def test_int8_scan_runs_without_onnx() -> None:
    """The scan's model is written without onnx; onnxruntime runs it."""
    code = (
        "import sys, numpy as np\n"
        "from memory_console.embed.int8scan import dot_codes\n"
        "codes = np.full((3, 4), 130, np.uint8)\n"
        "print(dot_codes(codes, np.ones((4, 1), np.int8)).tolist(), 'onnx' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["[8,", "8,", "8]", "False"]


def test_scan_model_bytes_are_what_onnx_helper_writes() -> None:
    import onnx  # a dependency (it rewrites the model's graph): never skipped
    from onnx import TensorProto, helper

    from memory_console.embed.int8scan import _scan_model

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["codes", "query", "zero"], ["scores"])],
        "int8_scan",
        [
            helper.make_tensor_value_info("codes", TensorProto.UINT8, ["rows", "dim"]),
            helper.make_tensor_value_info("query", TensorProto.INT8, ["dim", 1]),
            helper.make_tensor_value_info("zero", TensorProto.UINT8, []),
        ],
        [helper.make_tensor_value_info("scores", TensorProto.INT32, ["rows", 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    assert _scan_model() == model.SerializeToString()
    onnx.checker.check_model(onnx.load_model_from_string(_scan_model()))


def test_semantic_search_imports_onnx_only_to_make_the_kept_rewrite(tmp_path: Path) -> None:
    """The first load rewrites the graph with onnx and keeps it; the next search reads the
    kept rewrite back and finds the same memories without importing onnx."""
    db = str(tmp_path / "tiny.db")
    cache = tmp_path / "cache"
    env = {"MEMORY_CONSOLE_CACHE_DIR": str(cache)}
    keep_variant_choice(cache, "rewritten float32")
    imported_by("--db", db, "demo", "--count", "20")
    first = imported_by("--db", db, "search", "--mode", "semantic", "editor", env=env)
    assert "onnx" in first and "onnxruntime" in first
    kept = sorted(p.name.startswith("session-") for p in (cache / "models").iterdir())
    assert kept == [False, False, True, True]  # the rewrite and the optimised session graph
    second = imported_by("--db", db, "search", "--mode", "semantic", "editor", env=env)
    assert "onnxruntime" in second and "onnx" not in second


def test_a_damaged_kept_rewrite_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_console.embed.embedder import Embedder

    monkeypatch.setenv("MEMORY_CONSOLE_CACHE_DIR", str(tmp_path))
    keep_variant_choice(tmp_path, "rewritten float32")
    first = Embedder.load()
    assert first.variant == "rewritten float32"
    for kept in (tmp_path / "models").glob("*.onnx"):  # the rewrite and the session graph
        kept.write_bytes(kept.read_bytes()[:-100] + b"\0" * 100)
    again = Embedder.load()
    assert again.model_id == first.model_id and again.variant == "rewritten float32"
    text = "prefers dark mode in every editor"
    assert float(first.embed_query(text) @ again.embed_query(text)) > 0.9999
    # The damaged copy was replaced by a good one, which a third load reads back.
    assert Embedder.load().model_id == first.model_id


def test_the_optimised_session_graph_is_kept_and_gives_the_same_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first load saves onnxruntime's optimised graph beside the rewrite; the next opens
    that file with optimisations off (no rewrite, no second optimisation, a lower peak of
    memory) and embeds exactly as the first."""
    import numpy as np

    from memory_console.embed import model_cache
    from memory_console.embed.embedder import Embedder

    monkeypatch.setenv("MEMORY_CONSOLE_CACHE_DIR", str(tmp_path))
    texts = ["prefers dark mode in every editor", "Meeting with Bob on Tuesday at 10:00"]
    first = Embedder.load()
    [graph] = (tmp_path / "models").glob("session-*.onnx")
    opened: list[object] = []
    rewrites: list[object] = []
    monkeypatch.setattr(model_cache, "load", lambda key: rewrites.append(key))
    original = model_cache.session_file

    def session_file(key: str) -> Path | None:
        found = original(key)
        opened.append(found)
        return found

    monkeypatch.setattr(model_cache, "session_file", session_file)
    second = Embedder.load()
    assert opened == [graph] and rewrites == []
    assert second.model_id == first.model_id
    assert np.array_equal(first.embed(texts), second.embed(texts))

"""What the quick commands import: --version and --help stay light, the int8 scan needs no onnx."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent
HEAVY = ("sqlmodel", "textual", "onnxruntime", "onnx")


def imported_by(*argv: str) -> set[str]:
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
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_version_imports_no_numpy_or_heavy_module() -> None:
    modules = imported_by("--version")
    assert not {"numpy", *HEAVY} & modules


def test_help_imports_no_heavy_module() -> None:
    assert not set(HEAVY) & imported_by("--help")


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
    onnx = pytest.importorskip("onnx")
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

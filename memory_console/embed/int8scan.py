"""8-bit codes of unit vectors, and a fast scan of them (onnxruntime's MatMulInteger).

A float32 scan of a million 384-dimension vectors reads 1.5 GB and is limited by memory speed
(about 100 ms on two cores). The same scan over 8-bit codes reads a quarter of that, with the
integer dot products onnxruntime runs on VNNI (x86) or dot-product (ARM) instructions.

Each row v is stored as codes a (uint8, zero point 128) with its own scale s, so that
v = s * (a - 128) + e, and the norm of the rounding error e is kept too. A query q is rounded
the same way at search time. For unit vectors the error of the approximate score is then
bounded: |v.q - s s_q (a - 128).b| <= |e_q| + |e_v| + |e_v| |e_q| (Cauchy-Schwarz on each
term). VectorIndex uses the bound to pick candidates that are certain to contain the exact
top k, and scores those candidates exactly in float32.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

ZERO_POINT = 128
_LEVELS = 127.0
# A query is rounded to 7 bits (-64..64 at most): x86 CPUs without VNNI multiply unsigned by
# signed bytes with vpmaddubsw, which adds two products into a saturating 16-bit sum, and
# 255 * 127 * 2 overflows it (23 of 86 scores were wrong on one AVX2 machine) while
# 255 * 64 * 2 = 32,640 does not. The bound below holds with the query's own rounding error.
QUERY_LEVELS = 63.0
_QUANTIZE_CHUNK_ROWS = 1024
# Room for float32 rounding in the scale products and the norms of unit vectors.
BOUND_SLACK = 1e-4

_session_lock = threading.Lock()
_session: Any = None


def quantize_rows(
    rows: np.ndarray, codes: np.ndarray, scales: np.ndarray, errors: np.ndarray
) -> None:
    """Write the uint8 codes, scales and rounding-error norms of float32 rows into the outputs."""
    dim = rows.shape[1]
    # Chunks small enough for the temporaries to stay in cache.
    levels = np.empty((min(rows.shape[0], _QUANTIZE_CHUNK_ROWS), dim), dtype=np.float32)
    residual = np.empty_like(levels)
    for start in range(0, rows.shape[0], _QUANTIZE_CHUNK_ROWS):
        chunk = rows[start : start + _QUANTIZE_CHUNK_ROWS]
        size = chunk.shape[0]
        level, rest = levels[:size], residual[:size]
        peak = np.maximum(chunk.max(axis=1), -chunk.min(axis=1))
        scale = np.where(peak > 0.0, peak / _LEVELS, 1.0).astype(np.float32)
        np.multiply(chunk, (1.0 / scale)[:, None], out=level)
        np.rint(level, out=level)
        np.clip(level, -_LEVELS, _LEVELS, out=level)
        np.multiply(level, scale[:, None], out=rest)
        np.subtract(chunk, rest, out=rest)
        errors[start : start + size] = np.sqrt(np.einsum("ij,ij->i", rest, rest))
        scales[start : start + size] = scale
        level += ZERO_POINT
        codes[start : start + size] = level


def quantize_query(vector: np.ndarray) -> tuple[np.ndarray, float, float] | None:
    """(int8 levels within +-QUERY_LEVELS as a [dim, 1] column, scale, rounding-error norm);
    None for a zero vector."""
    peak = float(np.abs(vector).max()) if vector.size else 0.0
    if peak == 0.0:
        return None
    scale = peak / QUERY_LEVELS
    levels = np.clip(np.rint(vector / scale), -QUERY_LEVELS, QUERY_LEVELS)
    error = float(np.linalg.norm(vector - levels * scale))
    return levels.astype(np.int8).reshape(-1, 1), scale, error


def dot_codes(codes: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """int32 dot products of each row's codes (minus the zero point) with the query levels."""
    if codes.shape[0] == 0:
        return np.empty(0, dtype=np.int32)
    result = _scan_session().run(
        ["scores"], {"codes": codes, "query": levels, "zero": np.array(ZERO_POINT, np.uint8)}
    )[0]
    return result.reshape(-1)


_scan_checked: str | None = None


def scan_problem() -> str:
    """Why the 8-bit scan must not be used on this machine ("" when it may): the kernel that
    runs here is compared with numpy's exact integer products on codes and levels at their
    extremes (every intermediate sum a kernel may form at its largest), long runs of one sign
    and random ones. Checked once per process, in a few milliseconds."""
    global _scan_checked
    if _scan_checked is None:
        _scan_checked = _check_scan()
    return _scan_checked


def _check_scan() -> str:
    generator = np.random.default_rng(11)
    dim = 384
    top = int(QUERY_LEVELS)
    codes = np.concatenate(
        [
            np.full((4, dim), 255, dtype=np.uint8),
            np.zeros((4, dim), dtype=np.uint8),
            np.tile(np.array([255, 0], dtype=np.uint8), (4, dim // 2)),
            generator.integers(0, 256, (52, dim), dtype=np.uint8),
        ]
    )
    queries = [
        np.full(dim, top, dtype=np.int8),
        np.full(dim, -top, dtype=np.int8),
        np.tile(np.array([top, -top], dtype=np.int8), dim // 2),
        generator.integers(-top, top + 1, dim, dtype=np.int8),
    ]
    try:
        for levels in queries:
            column = levels.reshape(-1, 1)
            expected = (codes.astype(np.int64) - ZERO_POINT) @ column.astype(np.int64)
            found = dot_codes(codes, column)
            if not np.array_equal(found.astype(np.int64), expected.reshape(-1)):
                wrong = int(np.count_nonzero(found != expected.reshape(-1)))
                return (
                    f"its integer products differ from numpy's on this CPU "
                    f"({wrong} of {len(codes)} rows)"
                )
    except Exception as error:  # an onnxruntime without MatMulInteger, say
        return f"it cannot run here ({error})"
    return ""


def _scan_session() -> Any:
    global _session
    with _session_lock:
        if _session is None:
            import onnxruntime

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = max(1, min(os.cpu_count() or 1, 8))
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            # Worker threads sleep between scans instead of spinning on the UI's cores.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            _session = onnxruntime.InferenceSession(
                _scan_model(), sess_options=options, providers=["CPUExecutionProvider"]
            )
        return _session


def _scan_model() -> bytes:
    """The ONNX model of one MatMulInteger, written as protobuf wire bytes here so that a search
    needs no onnx package (tests compare it with onnx.helper's serialization)."""
    uint8, int8, int32 = 2, 3, 6  # onnx TensorProto.DataType
    node = _strings(1, "codes", "query", "zero") + _strings(2, "scores")  # inputs, output
    node += _strings(4, "MatMulInteger")  # NodeProto.op_type
    graph = (
        _message(1, node)
        + _strings(2, "int8_scan")  # GraphProto.name
        + _tensor_info(11, "codes", uint8, ["rows", "dim"])
        + _tensor_info(11, "query", int8, ["dim", 1])
        + _tensor_info(11, "zero", uint8, [])
        + _tensor_info(12, "scores", int32, ["rows", 1])
    )
    opset = _message(8, _strings(1, "") + _varint_field(2, 13))  # default domain, version 13
    return _varint_field(1, 8) + _message(7, graph) + opset  # ModelProto: ir_version 8


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varint_field(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _message(field: int, payload: bytes) -> bytes:
    """A length-delimited field (a string or an embedded message)."""
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _strings(field: int, *values: str) -> bytes:
    return b"".join(_message(field, value.encode()) for value in values)


def _tensor_info(field: int, name: str, elem_type: int, shape: list[str | int]) -> bytes:
    """A ValueInfoProto: name, then TypeProto.tensor_type with elem_type and shape."""
    dims = b"".join(
        _message(1, _varint_field(1, dim) if isinstance(dim, int) else _strings(2, dim))
        for dim in shape
    )
    tensor = _varint_field(1, elem_type) + _message(2, dims)
    return _message(field, _strings(1, name) + _message(2, _message(1, tensor)))

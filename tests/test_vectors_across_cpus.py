"""One model id, one set of vectors: the vectors made here agree with those recorded on other
CPUs (tests/data/vectors/, made by tests/record_vectors.py), within the calibration's
tolerance, for each variant calibration may choose."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from memory_console.embed import calibration
from memory_console.embed.embedder import read_manifest
from tests.record_vectors import FOLDER, TEXTS, vectors_of

RECORDS = sorted(FOLDER.glob("*.json"))


def test_vectors_are_recorded_on_a_cpu_with_8_bit_dot_products_and_one_without() -> None:
    flags = [set(json.loads(path.read_text(encoding="utf-8"))["flags"]) for path in RECORDS]
    assert any("avx512_vnni" in found or "avx_vnni" in found for found in flags)
    assert any(not found & {"avx512_vnni", "avx_vnni", "avx512f"} for found in flags)


@pytest.fixture(scope="module")
def here() -> dict[str, np.ndarray]:
    return {variant: vectors_of(variant) for variant in ("as shipped", "rewritten float32")}


@pytest.mark.parametrize("record", RECORDS, ids=[path.stem for path in RECORDS])
def test_vectors_made_here_are_the_recorded_ones(record: Path, here: dict[str, np.ndarray]) -> None:
    data = json.loads(record.read_text(encoding="utf-8"))
    assert data["model_id"] == read_manifest().model_id and data["texts"] == list(TEXTS)
    for variant, encoded in data["vectors"].items():
        recorded = np.frombuffer(base64.b64decode(encoded), dtype="<f4").reshape(len(TEXTS), -1)
        for made in here.values():
            difference = calibration.cosine_difference(made, recorded)
            assert difference < calibration.TOLERANCE, (variant, data["cpu"], difference)

"""Kernels chosen by measuring: kept once per machine, remade on a new key, interchangeable
vectors only; the doctor command; model hashes kept while the files are unchanged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_console.embed import calibration, verified
from memory_console.embed import embedder as embedder_module
from memory_console.embed.embedder import (
    Embedder,
    ModelError,
    _VariantOpener,
    file_sha256,
    read_manifest,
    verify_manifest,
)
from tests.helpers import consolidation_pairs, invoke

DATA = Path(__file__).parent / "data"


@pytest.fixture
def measuring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache directory of this test's own, with measuring on."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MEMORY_CONSOLE_CACHE_DIR", str(cache))
    monkeypatch.setenv(calibration.CALIBRATE_ENV, "1")
    return cache


def doctor_json(*argv: str, env: dict[str, str]) -> dict[str, Any]:
    """`memory-console doctor --json` in a fresh process, as a user runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "memory_console.cli", "doctor", "--json", *argv],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_calibration_is_measured_once_and_read_back_by_later_processes(
    measuring: Path,
) -> None:
    env = {"MEMORY_CONSOLE_CACHE_DIR": str(measuring), calibration.CALIBRATE_ENV: "1"}
    first = doctor_json(env=env)["calibration"]
    assert first["measured"] and first["key"] == calibration.machine_key(
        first["key"]["model_sha256"], list(embedder_module.VARIANTS)
    )
    figures = {figure["name"]: figure for figure in first["embedder_figures"]}
    assert list(figures) == ["as shipped", "rewritten float32", "int8 products"]
    # Each candidate was held to the reference computed in that process, on this CPU.
    assert figures["as shipped"]["refused"] == ""
    assert "cosines differ by" in figures["int8 products"]["refused"]
    for figure in figures.values():
        if not figure["refused"]:
            assert figure["cosine_difference"] <= calibration.TOLERANCE
            assert figure["batch_difference"] <= calibration.TOLERANCE
    assert first["embedder"] in figures and not figures[first["embedder"]]["refused"]
    assert {figure["name"] for figure in first["index_figures"]} == {"float32", "int8 codes"}
    assert all(figure["speed"] > 0 for figure in first["index_figures"])
    kept = measuring / calibration.FILE_NAME
    written = kept.stat().st_mtime_ns
    # A marker only the kept record carries: a second process that measured would lose it.
    data = json.loads(kept.read_text())
    [record] = data["records"].values()
    record["measured_at"] = "kept"
    kept.write_text(json.dumps(data))
    written = kept.stat().st_mtime_ns
    second = doctor_json(env=env)["calibration"]
    assert second["measured_at"] == "kept" and kept.stat().st_mtime_ns == written
    assert second["embedder"] == first["embedder"] and second["index"] == first["index"]


def test_a_record_of_another_key_is_measured_again(measuring: Path) -> None:
    Embedder.load()
    kept = measuring / calibration.FILE_NAME
    data = json.loads(kept.read_text())
    [record] = data["records"].values()
    right_key = dict(record["key"])
    # As if measured with another onnxruntime and another CPU, choosing the other scan.
    record["key"]["onnxruntime"] = "0.0.1"
    record["key"]["cpu"] = "Another CPU"
    record["measured_at"] = "elsewhere"
    record["index"] = "float32" if record["index"] == "int8 codes" else "int8 codes"
    kept.write_text(json.dumps(data))
    loaded = Embedder.load()
    assert loaded.calibration is not None and loaded.calibration.measured
    assert loaded.calibration.measured_at != "elsewhere"
    [record] = json.loads(kept.read_text())["records"].values()
    assert record["key"] == right_key and record["measured_at"] != "elsewhere"


def test_measuring_off_takes_the_defaults_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_CONSOLE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(calibration.CALIBRATE_ENV, "0")
    loaded = Embedder.load()
    assert loaded.calibration is not None and not loaded.calibration.measured
    assert loaded.variant == "as shipped" and loaded.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert not (tmp_path / calibration.FILE_NAME).exists()


def test_the_index_scan_follows_the_choice(embedder: Embedder) -> None:
    from memory_console.embed.index import INT8_SCAN_FROM

    float32 = calibration.Calibration({}, "as shipped", calibration.INDEX_FLOAT32)
    int8 = calibration.Calibration({}, "as shipped", calibration.INDEX_INT8)
    assert float32.int8_scan_from == calibration.NEVER
    assert int8.int8_scan_from == INT8_SCAN_FROM


def real_texts() -> list[str]:
    texts = [json.loads(line)["text"] for line in (DATA / "memory_types.jsonl").open()]
    texts += [json.loads(line)["content"] for line in (DATA / "search/memories.jsonl").open()]
    texts += [pair["a"] for pair in consolidation_pairs()[:100]]
    return texts


def test_every_variant_is_held_to_the_file_as_shipped_on_the_machine_at_hand() -> None:
    """On 307 real texts, embedded here: the float32 rewrite gives the file's own vectors
    (cosines within the tolerance, alone or in a batch, no threshold's decision moved), as
    float arithmetic does on every CPU; the 8-bit products do not on any (one scale per batch
    of 8-bit activations), so calibration refuses them wherever it runs."""
    import onnxruntime
    import tokenizers

    manifest = read_manifest()
    tokenizer = embedder_module._open_tokenizer(manifest, tokenizers)
    opener = _VariantOpener(manifest, onnxruntime, tokenizer, 2)
    texts = real_texts()
    assert len(texts) >= 300
    vectors, alone, ids = {}, {}, {}
    for name in embedder_module.VARIANTS:
        variant = opener.open(name)
        assert variant is not None
        vectors[name], ids[name] = variant.embed(texts), variant.model_id
        alone[name] = np.stack([variant.embed_query(text) for text in texts[:40]])
    assert set(ids.values()) == {manifest.model_id}
    reference = vectors["as shipped"]
    float32 = vectors["rewritten float32"]
    assert calibration.cosine_difference(float32, reference) < calibration.TOLERANCE
    assert calibration.batch_difference(alone["rewritten float32"], float32[:40]) < 1e-5
    assert calibration.moved_decisions(float32, reference) == {}
    int8 = vectors["int8 products"]
    assert calibration.cosine_difference(int8, reference) > 100 * calibration.TOLERANCE


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_a_candidate_beyond_the_tolerance_is_refused_whatever_its_speed() -> None:
    rng = np.random.default_rng(3)
    base = unit(rng.standard_normal((8, 16)))
    moved = unit(base + 0.05 * rng.standard_normal(base.shape))
    candidates = [
        calibration.Candidate("reference", "m", lambda texts: base[[int(t) for t in texts]]),
        calibration.Candidate("different", "m", lambda texts: moved[[int(t) for t in texts]]),
        calibration.Candidate("same", "m", lambda texts: base[[int(t) for t in texts]].copy()),
    ]
    figures = calibration.measure_embedders(candidates, [str(n) for n in range(8)], batch=8)
    assert [bool(figure.refused) for figure in figures] == [False, True, False]
    assert "cosines differ" in figures[1].refused
    assert calibration.fastest(figures) in ("reference", "same")


def test_a_candidate_whose_vectors_move_with_the_batch_is_refused() -> None:
    """Its batched vectors are the reference's, but alone each text's vector is another."""
    rng = np.random.default_rng(4)
    base = unit(rng.standard_normal((8, 16)))
    moved = unit(base + 0.01 * rng.standard_normal(base.shape))
    texts = [f"text {number}" for number in range(8)]

    def by_batch(batch: list[str]) -> np.ndarray:
        rows = base if len(batch) > 1 else moved
        return np.stack([rows[texts.index(text)] for text in batch])

    candidates = [
        calibration.Candidate(
            "reference", "m", lambda batch: base[[texts.index(text) for text in batch]]
        ),
        calibration.Candidate("batch-dependent", "m", by_batch),
    ]
    figures = calibration.measure_embedders(candidates, texts, batch=8)
    assert figures[0].refused == "" and figures[1].cosine_difference < calibration.TOLERANCE
    assert "moves by" in figures[1].refused and "with its batch" in figures[1].refused


def test_a_candidate_within_the_tolerance_that_moves_a_threshold_decision_is_refused() -> None:
    """Two texts at cosine 0.92 + 3e-5 under the reference and 0.92 - 3e-5 under the
    candidate: within the tolerance, but remember() would reinforce under one and store under
    the other, so the candidate is refused."""
    threshold = calibration.cosine_thresholds()["duplicate"]

    def pair(cosine: float) -> np.ndarray:
        angle = np.arccos(cosine)
        return np.array([[1.0, 0.0], [np.cos(angle), np.sin(angle)]], dtype=np.float64)

    reference = pair(threshold + 3e-5).astype(np.float32)
    candidate = pair(threshold - 3e-5).astype(np.float32)
    assert calibration.cosine_difference(candidate, reference) < calibration.TOLERANCE
    assert calibration.moved_decisions(candidate, reference) == {"duplicate": 1}
    candidates = [
        calibration.Candidate("reference", "m", lambda texts: reference[[int(t) for t in texts]]),
        calibration.Candidate("close", "m", lambda texts: candidate[[int(t) for t in texts]]),
    ]
    figures = calibration.measure_embedders(candidates, ["0", "1"], batch=2)
    assert figures[1].refused == "moves decisions at cosine thresholds (duplicate 1 pairs)"


def test_doctor_reports_the_machine_the_choice_and_the_vector_file(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cache of its own: the run's shared one may hold a record another test measured.
    monkeypatch.setenv("MEMORY_CONSOLE_CACHE_DIR", str(tmp_path / "cache"))
    assert invoke(["--db", str(db_path), "demo", "--count", "30"]).code == 0
    result = invoke(["--db", str(db_path), "doctor", "--json"])
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["cpu"]["model"] == calibration.cpu_model()
    assert set(report["cpu"]["flags"]) <= set(calibration.RELEVANT_FLAGS)
    assert set(report["libraries"]) == {"onnxruntime", "numpy", "tokenizers"}
    assert report["cache_dir"] == os.environ["MEMORY_CONSOLE_CACHE_DIR"]
    assert report["model"]["ok"] and report["model"]["model_id"] == "all-MiniLM-L6-v2-onnx-int8"
    assert [file["role"] for file in report["model"]["files"]] == ["onnx", "tokenizer"]
    chosen = report["calibration"]
    assert chosen["embedder"] == "as shipped" and not chosen["measured"]
    assert "nothing measured" in chosen["why"]
    assert report["vector_file"]["state"] in ("absent", "current")
    text = invoke(["--db", str(db_path), "doctor"])
    assert text.code == 0
    for label in ("cpu", "libraries", "cache", "model", "embedder", "index scan", "vector file"):
        assert any(line.startswith(label) for line in text.out.splitlines()), label
    # Without --db no store is looked at.
    assert "vector_file" not in json.loads(invoke(["doctor", "--json"]).out)


def test_doctor_says_when_the_model_is_refused(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    data = json.loads(read_manifest().path.read_text())
    data["files"]["tokenizer"]["sha256"] = "0" * 64
    data["files"]["tokenizer"]["path"] = str(read_manifest().tokenizer.path)
    manifest.write_text(json.dumps(data))
    result = invoke(["doctor", "--model-manifest", str(manifest), "--json"])
    assert result.code == 1 and "sha256 mismatch" in result.err
    assert not json.loads(result.out)["model"]["ok"]


def test_a_verified_hash_is_read_back_while_the_file_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_CONSOLE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "weights.bin"
    path.write_bytes(b"a" * 1000)
    digest = file_sha256(path)
    stat = path.resolve().stat()
    assert verified.recorded(path.resolve(), stat) == digest
    # A later process (no in-process memory) takes the record's word for the unchanged file:
    # a planted digest shows that the file was not read again.
    verified.record(path.resolve(), stat, "f" * 64)
    embedder_module._hash_cache.clear()
    assert file_sha256(path) == "f" * 64
    # Once the file changes it is hashed again, whatever the record says.
    path.write_bytes(b"b" * 1000)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    embedder_module._hash_cache.clear()
    assert file_sha256(path) != "f" * 64


def test_a_tampered_model_file_is_refused_after_its_hash_was_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_CONSOLE_CACHE_DIR", str(tmp_path / "cache"))
    shipped = read_manifest()
    model = tmp_path / "model.onnx"
    shutil.copyfile(shipped.onnx.path, model)
    data = json.loads(shipped.path.read_text())
    data["files"]["onnx"] = {"path": str(model), "size": shipped.onnx.size}
    data["files"]["onnx"]["sha256"] = shipped.onnx.sha256
    data["files"]["tokenizer"]["path"] = str(shipped.tokenizer.path)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(data))
    verify_manifest(read_manifest(manifest))
    assert json.loads((tmp_path / "cache" / verified.RECORD_NAME).read_text())
    # One byte changed in place, size and modification time kept.
    stat = model.stat()
    with model.open("r+b") as handle:
        handle.seek(stat.st_size // 2)
        byte = handle.read(1)
        handle.seek(stat.st_size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    embedder_module._hash_cache.clear()
    with pytest.raises(ModelError, match="sha256 mismatch"):
        verify_manifest(read_manifest(manifest))
    with pytest.raises(ModelError, match="sha256 mismatch"):
        Embedder.load(manifest)


def labelled_pairs() -> list[tuple[str, str, str]]:
    """(first text, second text, the threshold that decides the pair) of every labelled set
    a threshold was chosen on: forget phrases against every memory, update pairs, and the
    consolidation pairs (against the consolidation and the duplicate thresholds)."""
    rows = [json.loads(line) for line in (DATA / "forget_phrases.jsonl").open()]
    memories = [row["content"] for row in rows if "memory" in row]
    phrases = [row["phrase"] for row in rows if "phrase" in row]
    pairs = [
        (phrase, memory, name)
        for phrase in phrases
        for memory in memories
        for name in ("forget", "forget + margin")
    ]
    for line in (DATA / "update_pairs.jsonl").open():
        row = json.loads(line)
        pairs.append((row["existing"], row["new"], "update"))
    for pair in consolidation_pairs():
        pairs += [(pair["a"], pair["b"], "consolidate"), (pair["a"], pair["b"], "duplicate")]
    return pairs


def test_no_variant_that_can_run_moves_a_labelled_decision() -> None:
    """Every threshold decided every labelled pair alike under each variant whose vectors the
    calibration can accept (the file as shipped and the float32 rewrite), on this CPU: the
    thresholds were chosen on these pairs, and hold whichever of them a machine picks."""
    import onnxruntime
    import tokenizers

    manifest = read_manifest()
    tokenizer = embedder_module._open_tokenizer(manifest, tokenizers)
    opener = _VariantOpener(manifest, onnxruntime, tokenizer, 2)
    pairs = labelled_pairs()
    texts = sorted({text for first, second, _ in pairs for text in (first, second)})
    position = {text: number for number, text in enumerate(texts)}
    thresholds = calibration.cosine_thresholds()
    decisions = {}
    for name in ("as shipped", "rewritten float32"):
        variant = opener.open(name)
        assert variant is not None
        vectors = variant.embed(texts)
        decisions[name] = [
            float(vectors[position[first]] @ vectors[position[second]]) >= thresholds[threshold]
            for first, second, threshold in pairs
        ]
    assert len(pairs) > 2000
    assert decisions["rewritten float32"] == decisions["as shipped"]

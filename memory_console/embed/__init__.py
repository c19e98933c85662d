"""The ONNX embedder, the exact vector index and rank fusion for hybrid search."""

from memory_console.embed.embedder import (
    MANIFEST_ENV,
    Embedder,
    Manifest,
    ModelError,
    ModelFile,
    content_hash,
    default_manifest_path,
    embedding_text,
    file_sha256,
    read_manifest,
    verify_manifest,
)
from memory_console.embed.fusion import FusedHit, reciprocal_rank_fusion
from memory_console.embed.index import VectorIndex

__all__ = [
    "MANIFEST_ENV",
    "Embedder",
    "FusedHit",
    "Manifest",
    "ModelError",
    "ModelFile",
    "VectorIndex",
    "content_hash",
    "default_manifest_path",
    "embedding_text",
    "file_sha256",
    "read_manifest",
    "reciprocal_rank_fusion",
    "verify_manifest",
]

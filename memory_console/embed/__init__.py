"""The ONNX embedder, the exact vector index and rank fusion for hybrid search.

Names load on first use, so that importing a light module here (embed.hits, say) does not
import numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_console.lazy import names_from

if TYPE_CHECKING:
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

_HOMES = {
    "fusion": ("FusedHit", "reciprocal_rank_fusion"),
    "index": ("VectorIndex",),
    "embedder": (
        "MANIFEST_ENV",
        "Embedder",
        "Manifest",
        "ModelError",
        "ModelFile",
        "content_hash",
        "default_manifest_path",
        "embedding_text",
        "file_sha256",
        "read_manifest",
        "verify_manifest",
    ),
}
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

__getattr__ = names_from(__name__, _HOMES, globals())

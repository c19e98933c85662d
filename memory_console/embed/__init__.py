"""The ONNX embedder, the exact vector index and rank fusion for hybrid search.

Names load on first use, so that importing a light module here (embed.hits, say) does not
import numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

"""Reindex at the embedder's pace: each distinct text embedded once, in order of length across
the whole store, and the index file left current for the next process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memory_console.embed.mapped_index import MappedIndex
from memory_console.embed.semantic import REWRITE_AFTER, SemanticIndex, memory_text
from memory_console.store import Store
from memory_console.store import embeddings as table
from tests.helpers import NOW

if TYPE_CHECKING:
    from memory_console.embed.embedder import Embedder


class CountingEmbedder:
    """The real embedder, with the texts of each embed() call kept."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        self.calls.append(list(texts))
        return self.embedder.embed(texts, batch_size)

    def __getattr__(self, name: str) -> object:
        return getattr(self.embedder, name)


def add_repeated(store: Store, distinct: int, count: int) -> list[int]:
    """`count` memories over `distinct` texts of many lengths, repeats spread far apart."""
    return store.add_many(
        [
            {"content": f"note {i % distinct} " + "word " * ((i % distinct) * 7 % 41)}
            for i in range(count)
        ],
        now=NOW,
    )


def test_each_distinct_text_is_embedded_once_in_order_of_length(
    store: Store, embedder: Embedder
) -> None:
    add_repeated(store, distinct=300, count=900)
    counting = CountingEmbedder(embedder)
    assert SemanticIndex(store, counting).sync() == 900  # type: ignore[arg-type]
    embedded = [text for call in counting.calls for text in call]
    assert len(embedded) == len(set(embedded)) == 300
    # One order of length over every batch: short texts are never padded to long ones.
    assert [len(text) for text in embedded] == sorted(len(text) for text in embedded)
    rows = table.active_texts_checked(store)[1]
    texts = {row[0]: memory_text(row[1], row[2], row[3]) for row in rows}
    ids, matrix, _ = table.load_active_vectors(store, embedder.model_id, embedder.dim)
    assert len(ids) == 900
    by_text: dict[str, bytes] = {}
    for ident, vector in zip(ids.tolist(), matrix, strict=True):
        # Every memory of one text has the one vector made for it...
        assert by_text.setdefault(texts[ident], vector.tobytes()) == vector.tobytes()
    # ...and it is that text's (alone, the int8 model's figures differ a little from a batch's).
    for text, vector in list(by_text.items())[::29]:
        alone = embedder.embed([text])[0]
        assert float(np.frombuffer(vector, np.float32) @ alone) > 0.95


def test_a_large_sync_leaves_the_index_file_current(store: Store, embedder: Embedder) -> None:
    """The next process opens the file as it is: no rebuild, nothing read into an overlay."""
    add_repeated(store, distinct=20, count=REWRITE_AFTER + 100)
    semantic = SemanticIndex(store, embedder)
    semantic.sync()
    assert len(semantic.index) == REWRITE_AFTER + 100
    later = SemanticIndex(store, embedder)
    later.load()
    assert later.source == "file"
    assert isinstance(later.index, MappedIndex) and later.index.overlay_size == 0
    assert len(later.index) == REWRITE_AFTER + 100


def test_another_models_vectors_are_dropped_and_only_theirs(tmp_path: Path) -> None:
    """drop_other_models finds other models through the model_id index, on both sides of the
    current id (it read every row with `!=`), and deletes only theirs."""
    with Store(tmp_path / "models.db", actor="test") as store:
        ids = store.add_many([{"content": f"fact {i}"} for i in range(6)], now=NOW)
        vector = np.ones(4, np.float32).tobytes()
        for model, part in (("b-model", ids[:2]), ("a-model", ids[2:4]), ("c-model", ids[4:])):
            table.write_vectors(store, model, [(ident, "hash", vector) for ident in part])
        assert table.other_models(store, "b-model") == ["a-model", "c-model"]
        assert table.drop_other_models(store, "b-model") == {"a-model": 2, "c-model": 2}
        assert table.other_models(store, "b-model") == []
        assert table.drop_other_models(store, "b-model") == {}
        assert len(table.load_active_vectors(store, "b-model", 4)[0]) == 2

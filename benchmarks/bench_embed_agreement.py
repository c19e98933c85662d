"""Does the embedder give the plain model's answers? On demo memory texts, each graph variant
against the model file run plainly in onnxruntime (its own session with default options, the
same tokenizer, mean pooling and L2 normalisation written out here): nearest neighbour kept,
top-10 overlap, pair orders flipped, a query of a memory's exact text against its stored
vector, and the throughput of each in the same run.

    python benchmarks/bench_embed_agreement.py [--texts 1000]

Targets: the embedder as calibrated here keeps the nearest neighbour of >= 98% of texts and
>= 99% of each top 10.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_console.embed import calibration  # noqa: E402
from memory_console.embed import embedder as embedder_module  # noqa: E402
from memory_console.embed.embedder import Embedder, embedding_text  # noqa: E402


def demo_texts(count: int) -> list[str]:
    """The embedded texts of a demo store's first `count` distinct memories."""
    from memory_console.demo import build_demo
    from memory_console.store import Store

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "demo.db"
        build_demo(path, count=max(2 * count, 2000), seed=7)
        with Store(path, read_only=True) as store:
            rows = store._query("SELECT title, content, keywords FROM memory ORDER BY id")
    texts = [
        embedding_text(title, content, json.loads(keywords or "[]"))
        for title, content, keywords in rows
    ]
    return list(dict.fromkeys(texts))[:count]


def plain_vectors(texts: list[str], threads: int, batch: int) -> tuple[np.ndarray, float]:
    """The shipped file in a plain onnxruntime session; (vectors, seconds)."""
    import onnxruntime

    manifest = embedder_module.read_manifest()
    import tokenizers

    tokenizer = embedder_module._open_tokenizer(manifest, tokenizers)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(
        str(manifest.onnx.path), sess_options=options, providers=["CPUExecutionProvider"]
    )
    out = np.empty((len(texts), manifest.dim), dtype=np.float32)
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        encodings = tokenizer.encode_batch(texts[start : start + batch])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = session.run(
            [manifest.output_name],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        out[start : start + batch] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return out, time.perf_counter() - started


def neighbours(vectors: np.ndarray, k: int) -> np.ndarray:
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -np.inf)
    return np.argsort(-similarity, axis=1, kind="stable")[:, :k]


def agreement(vectors: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    ours, theirs = neighbours(vectors, 10), neighbours(reference, 10)
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ours, theirs, strict=True)])
    rng = np.random.default_rng(3)
    first, second, third = (rng.integers(0, len(vectors), 20000) for _ in range(3))
    ordered = np.sign(np.sum(vectors[first] * (vectors[second] - vectors[third]), axis=1))
    expected = np.sign(np.sum(reference[first] * (reference[second] - reference[third]), axis=1))
    return {
        "nearest": float(np.mean(ours[:, 0] == theirs[:, 0])),
        "top10": float(overlap),
        "flips": float(np.mean(ordered != expected)),
        "drift": calibration.cosine_difference(vectors, reference),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    os.environ.setdefault("MEMORY_CONSOLE_CACHE_DIR", tempfile.mkdtemp(prefix="bench-cache-"))
    os.environ[calibration.CALIBRATE_ENV] = "1"
    print(
        f"cpu: {calibration.cpu_model()} ({' '.join(calibration.cpu_flags())}), "
        f"{os.cpu_count()} cores; {calibration.library_versions()}"
    )
    texts = demo_texts(args.texts)
    print(f"{len(texts)} distinct demo texts, batch {args.batch_size}, {args.threads} threads")
    reference, plain_seconds = plain_vectors(texts, args.threads, args.batch_size)
    plain_rate = len(texts) / plain_seconds
    chosen = Embedder.load(threads=args.threads)
    print(f"calibrated here: {chosen.variant} ({chosen.model_id})")
    import onnxruntime
    import tokenizers

    manifest = chosen.manifest
    opener = embedder_module._VariantOpener(
        manifest, onnxruntime, embedder_module._open_tokenizer(manifest, tokenizers), args.threads
    )
    columns = ("texts/s", 9), ("x plain", 9), ("nearest", 9), ("top-10", 8), ("flips", 8)
    columns += (("drift", 10), ("self", 8))
    print(f"{'variant':<26}" + "".join(f"{name:>{width}}" for name, width in columns))
    print(
        f"{'plain onnxruntime':<26}{plain_rate:>9.0f}{1.0:>9.2f}{1.0:>9.3f}{1.0:>8.3f}"
        f"{0.0:>8.3f}{0.0:>10.1e}"
    )
    for name in embedder_module.VARIANTS:
        variant = opener.open(name)
        if variant is None:
            print(f"{name:<26} does not open here")
            continue
        variant.embed(texts[:64], batch_size=args.batch_size)
        started = time.perf_counter()
        vectors = variant.embed(texts, batch_size=args.batch_size)
        rate = len(texts) / (time.perf_counter() - started)
        found = agreement(vectors, reference)
        # A query of a memory's exact text, embedded alone, against the memory's vector.
        alone = np.stack([variant.embed_query(text) for text in texts[:200]])
        own = float(np.sum(alone * vectors[:200], axis=1).min())
        mark = " <- chosen" if name == chosen.variant else ""
        print(
            f"{name:<26}{rate:>9.0f}{rate / plain_rate:>9.2f}{found['nearest']:>9.3f}"
            f"{found['top10']:>8.3f}{found['flips']:>8.3f}{found['drift']:>10.1e}{own:>8.4f}{mark}"
        )
    print("nearest: share of texts whose nearest neighbour is the plain model's; top-10: mean")
    print("overlap of each text's 10 nearest; flips: share of 20,000 random pair orders reversed;")
    print(
        "drift: largest cosine difference; self: lowest cosine of a text alone to its vector "
        "in a batch"
    )


if __name__ == "__main__":
    main()

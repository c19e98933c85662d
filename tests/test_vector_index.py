"""Tests of VectorIndex against brute force, and of reciprocal rank fusion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memory_console.embed import FusedHit, VectorIndex, int8scan, reciprocal_rank_fusion
from memory_console.embed.index import INT8_SCAN_FROM

DIM = 16


def unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)


def check_search(
    index: VectorIndex,
    reference: dict[int, np.ndarray],
    query: np.ndarray,
    k: int,
    allowed: np.ndarray | None = None,
    labels: dict[int, int] | None = None,
    label: int | None = None,
) -> None:
    candidates = sorted(reference if allowed is None else set(reference) & set(allowed.tolist()))
    if label is not None:
        assert labels is not None
        candidates = [i for i in candidates if labels[i] == label]
    expected = sorted((float(reference[i] @ unit(query)) for i in candidates), reverse=True)[:k]
    wanted = [] if label is None else [(0, label)]
    ids, scores = index.search(query, k, allowed_ids=allowed, labels=wanted)
    assert ids.dtype == np.int64 and scores.dtype == np.float32
    assert len(ids) == len(set(ids.tolist())) == min(k, len(candidates))
    assert set(ids.tolist()) <= set(candidates)
    np.testing.assert_allclose(scores, expected, atol=1e-5)
    own = [float(reference[i] @ unit(query)) for i in ids.tolist()]
    np.testing.assert_allclose(scores, own, atol=1e-5)
    assert np.all(np.diff(scores) <= 0)


def check_state(index: VectorIndex, reference: dict[int, np.ndarray]) -> None:
    assert len(index) == len(reference)
    assert index.ids().tolist() == sorted(reference)
    if reference:
        ids = np.array(sorted(reference), dtype=np.int64)
        np.testing.assert_allclose(index.get(ids), [reference[i] for i in ids], atol=1e-6)


@pytest.mark.parametrize("int8_scan_from", [INT8_SCAN_FROM, 0])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_matches_brute_force_through_adds_upserts_and_removals(
    seed: int, int8_scan_from: int
) -> None:
    rng = np.random.default_rng(seed)
    index = VectorIndex(DIM, capacity=8, int8_scan_from=int8_scan_from, labels=1)
    reference: dict[int, np.ndarray] = {}
    labels: dict[int, int] = {}
    for _ in range(80):
        operation = rng.choice(["add", "relabel", "remove", "search"], p=[0.4, 0.1, 0.2, 0.3])
        if operation == "add":
            ids = rng.integers(-20, 400, size=int(rng.integers(1, 60)))
            vectors = rng.normal(size=(ids.size, DIM)).astype(np.float32)
            codes = rng.integers(0, 3, size=(ids.size, 1))
            index.add(ids, vectors, codes)
            for item, vector, code in zip(ids.tolist(), unit(vectors), codes[:, 0], strict=True):
                reference[item] = vector
                labels[item] = int(code)
        elif operation == "relabel":
            ids = rng.integers(-20, 400, size=20)
            codes = rng.integers(0, 3, size=(20, 1))
            index.set_labels(ids, codes)
            for item, code in zip(ids.tolist(), codes[:, 0], strict=True):
                if item in reference:
                    labels[item] = int(code)
        elif operation == "remove":
            ids = rng.integers(-20, 400, size=int(rng.integers(1, 40)))
            present = set(ids.tolist()) & set(reference)
            assert index.remove(ids) == len(present)
            for item in present:
                del reference[item]
        else:
            query = rng.normal(size=DIM).astype(np.float32)
            k = int(rng.integers(0, len(reference) + 5))
            check_search(index, reference, query, k)
            small = rng.choice(np.arange(-20, 400), size=int(rng.integers(1, 30)), replace=False)
            check_search(index, reference, query, k, allowed=small)
            large = rng.choice(np.arange(-20, 400), size=350, replace=False)
            check_search(index, reference, query, k, allowed=large)
            label = int(rng.integers(0, 4))  # 3 is on no row
            check_search(index, reference, query, k, labels=labels, label=label)
            check_search(index, reference, query, k, allowed=large, labels=labels, label=label)
        check_state(index, reference)
        for item in rng.integers(-20, 400, size=5).tolist():
            assert (item in index) == (item in reference)


def clustered(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    """Unit vectors in tight clusters with near-duplicates: the hard case for the 8-bit bound."""
    centres = unit(rng.normal(size=(20, dim)))
    picks = rng.integers(0, 20, size=count)
    spread = rng.choice([0.001, 0.05, 0.3], size=(count, 1))
    return unit(centres[picks] + spread * rng.normal(size=(count, dim)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_int8_scan_returns_the_exact_top_k(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    count, dim = 6000, 384
    vectors = clustered(rng, count, dim)
    ids = rng.permutation(count * 3)[:count].astype(np.int64)
    index = VectorIndex(dim, int8_scan_from=0)
    index.add(ids, vectors)
    scans: list[int] = []
    real_dot_codes = int8scan.dot_codes

    def counted(codes: np.ndarray, levels: np.ndarray) -> np.ndarray:
        scans.append(codes.shape[0])
        return real_dot_codes(codes, levels)

    monkeypatch.setattr(int8scan, "dot_codes", counted)
    score_of = dict(zip(ids.tolist(), range(count), strict=True))
    queries = np.vstack([clustered(rng, 20, dim), vectors[:5] + 1e-4])
    for query in queries:
        exact = vectors @ unit(query)
        allowed = ids[rng.random(count) < 0.5]
        kept = np.isin(ids, allowed)
        for k, allowed_ids, pool in (
            (1, None, exact),
            (10, None, exact),
            (50, None, exact),
            (10, allowed, np.where(kept, exact, -np.inf)),
        ):
            found, scores = index.search(query, k, allowed_ids=allowed_ids)
            # Near-duplicates tie to within float rounding, so compare scores, not ids.
            best = np.sort(pool)[::-1][:k]
            np.testing.assert_allclose(scores, best, atol=1e-5)
            own = exact[[score_of[item] for item in found.tolist()]]
            np.testing.assert_allclose(own, scores, atol=1e-6)
            assert len(set(found.tolist())) == k
            if allowed_ids is not None:
                assert set(found.tolist()) <= set(allowed.tolist())
    assert scans and all(rows == count for rows in scans)


def test_int8_scan_of_identical_vectors_falls_back_to_the_exact_product() -> None:
    index = VectorIndex(8, int8_scan_from=0)
    index.add(np.arange(100), np.ones((100, 8), dtype=np.float32))
    found, scores = index.search(np.ones(8, dtype=np.float32), 3)
    assert found.tolist() == [0, 1, 2]
    np.testing.assert_allclose(scores, 1.0, atol=1e-6)
    assert index.search(np.zeros(8, dtype=np.float32), 2)[0].tolist() == [0, 1]


def test_codes_bound_the_error() -> None:
    rng = np.random.default_rng(4)
    rows = unit(rng.normal(size=(500, 384)))
    codes = np.empty(rows.shape, np.uint8)
    scales = np.empty(500, np.float32)
    errors = np.empty(500, np.float32)
    int8scan.quantize_rows(rows, codes, scales, errors)
    query = unit(rng.normal(size=384))
    quantized = int8scan.quantize_query(query)
    assert quantized is not None
    levels, query_scale, query_error = quantized
    approximate = int8scan.dot_codes(codes, levels) * scales * query_scale
    bound = query_error + errors * (1 + query_error) + int8scan.BOUND_SLACK
    assert np.all(np.abs(approximate - rows @ query) <= bound)
    assert float(np.abs(approximate - rows @ query).max()) < 0.01


def test_upsert_replaces_and_last_duplicate_wins() -> None:
    index = VectorIndex(3)
    index.add(np.array([7, 8]), np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32))
    index.add([7, 7], np.array([[0, 0, 5], [0, 3, 0]], dtype=np.float32))
    assert len(index) == 2
    np.testing.assert_allclose(index.get([7]), [[0, 1, 0]])
    ids, scores = index.search(np.array([0, 2, 0], dtype=np.float32), 5)
    assert ids.tolist() == [7, 8] and scores.tolist() == [1.0, 1.0]


def test_removed_rows_never_score() -> None:
    index = VectorIndex(2)
    index.add([1, 2, 3], np.array([[1, 0], [-1, 0], [0, -1]], dtype=np.float32))
    assert index.remove([1, 99]) == 1
    assert 1 not in index and 2 in index and "2" not in index
    ids, scores = index.search(np.array([1, 0], dtype=np.float32), 10)
    assert ids.tolist() == [3, 2]
    np.testing.assert_allclose(scores, [0.0, -1.0])
    with pytest.raises(KeyError):
        index.get([1])


def test_edge_cases_and_validation() -> None:
    index = VectorIndex(4)
    ids, scores = index.search(np.ones(4, dtype=np.float32), 3)
    assert ids.shape == scores.shape == (0,)
    index.add([5], np.zeros(4, dtype=np.float32))
    ids, scores = index.search(np.ones(4, dtype=np.float32), 3)
    assert ids.tolist() == [5] and scores.tolist() == [0.0]
    assert index.search(np.ones(4), 3, allowed_ids=np.array([], dtype=np.int64))[0].size == 0
    assert index.search(np.ones(4), 3, allowed_ids=[6, 7])[0].size == 0
    assert index.search(np.ones(4), 0)[0].size == 0
    with pytest.raises(ValueError):
        index.add([1, 2], np.ones((3, 4), dtype=np.float32))
    with pytest.raises(ValueError):
        index.search(np.ones(5), 1)
    with pytest.raises(ValueError):
        index.add(np.array([1.5]), np.ones((1, 4)))
    with pytest.raises(ValueError):
        VectorIndex(0)


def test_capacity_and_memory() -> None:
    index = VectorIndex(384, capacity=10)
    assert index.nbytes >= 10 * 384 * 4
    index.reserve(5000)
    assert index.capacity == 5000
    rng = np.random.default_rng(9)
    index.add(np.arange(6000), rng.normal(size=(6000, 384)).astype(np.float32))
    assert index.capacity >= 6000 and len(index) == 6000
    assert index.nbytes >= index.capacity * 384 * 4 + 6000 * 8
    index.remove(np.arange(0, 6000, 2))
    assert len(index) == 3000 and index.ids().tolist() == list(range(1, 6000, 2))


def test_rrf_worked_example() -> None:
    hits = reciprocal_rank_fusion({"keyword": [10, 20, 30], "semantic": [20, 40, 10]})
    assert [hit.id for hit in hits] == [20, 10, 40, 30]
    assert hits[0] == FusedHit(20, 1 / 62 + 1 / 61, {"keyword": 2, "semantic": 1})
    assert hits[1].ranks == {"keyword": 1, "semantic": 3}
    assert math.isclose(hits[1].score, 1 / 61 + 1 / 63)
    assert hits[2] == FusedHit(40, 1 / 62, {"semantic": 2})
    assert hits[3] == FusedHit(30, 1 / 63, {"keyword": 3})


def test_rrf_ties_duplicates_weights_and_empty() -> None:
    tied = reciprocal_rank_fusion({"a": [9, 7, 8], "b": [8, 9, 7], "c": [7, 8, 9]})
    assert [hit.id for hit in tied] == [7, 8, 9]
    assert tied[0].score == tied[1].score == tied[2].score
    repeated = reciprocal_rank_fusion({"keyword": np.array([3, 3, 4])}, k=0)
    assert repeated == [FusedHit(3, 1.0, {"keyword": 1}), FusedHit(4, 1 / 3, {"keyword": 3})]
    weighted = reciprocal_rank_fusion({"keyword": [1], "semantic": [2]}, weights={"keyword": 2})
    assert [hit.id for hit in weighted] == [1, 2]
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"keyword": []}) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"keyword": [1]}, k=-1)


# -- the 8-bit scan under each CPU's integer kernel ------------------------------------------
# onnxruntime's MatMulInteger multiplies the codes (unsigned, zero point 128) by the query
# levels (signed) with whatever the CPU offers. VNNI, AVX-512 VNNI, AMX and ARM's dot-product
# instructions sum the byte products exactly in 32 bits. x86 without VNNI (AVX2, AVX-512F/BW)
# uses vpmaddubsw, which adds each two neighbouring products into a 16-bit sum that saturates.
# Both are written out in numpy below, so that every test here means the same on every CPU.


def exact_kernel(codes: np.ndarray, levels: np.ndarray) -> np.ndarray:
    return ((codes.astype(np.int64) - int8scan.ZERO_POINT) @ levels.astype(np.int64)).reshape(-1)


def pairwise_saturating_kernel(codes: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """vpmaddubsw: codes times levels, two neighbours summed and clipped to int16, those sums
    added in int32 (vpmaddwd), then the zero point's share taken off exactly."""
    products = codes.astype(np.int64) * levels.reshape(1, -1).astype(np.int64)
    pairs = np.clip(products[:, 0::2] + products[:, 1::2], -32768, 32767)
    return pairs.sum(axis=1) - int8scan.ZERO_POINT * int(levels.astype(np.int64).sum())


KERNELS = {"exact (VNNI, AMX, ARM dot product)": exact_kernel}
KERNELS["16-bit pair sums (AVX2 without VNNI)"] = pairwise_saturating_kernel


def extreme_codes(rng: np.random.Generator, dim: int) -> np.ndarray:
    """Codes at both ends of their range, alternating, and random ones."""
    return np.concatenate(
        [
            np.full((3, dim), 255, dtype=np.uint8),
            np.zeros((3, dim), dtype=np.uint8),
            np.tile(np.array([255, 0], dtype=np.uint8), (3, dim // 2)),
            rng.integers(0, 256, (50, dim), dtype=np.uint8),
        ]
    )


@pytest.mark.parametrize("kernel", KERNELS)
def test_query_levels_keep_every_kernel_exact(kernel: str) -> None:
    """Queries are rounded to at most 64 levels a side: a pair of products then stays within
    16 bits (255 * 64 * 2 = 32,640), so every kernel gives the exact integer products."""
    rng = np.random.default_rng(8)
    dim = 384
    codes = extreme_codes(rng, dim)
    peaked = np.zeros(dim, dtype=np.float32)
    peaked[::2], peaked[1::2] = 1.0, -1.0
    for vector in (np.ones(dim), -np.ones(dim), peaked, rng.normal(size=dim)):
        quantized = int8scan.quantize_query(unit(vector.astype(np.float32)))
        assert quantized is not None
        levels = quantized[0]
        assert int(np.abs(levels.astype(np.int64)).max()) <= 64
        np.testing.assert_array_equal(KERNELS[kernel](codes, levels), exact_kernel(codes, levels))


def test_full_range_query_levels_would_saturate_the_pair_sums() -> None:
    """What the query's 7 bits avoid: with 127 levels the AVX2 kernel is wrong."""
    codes = np.full((1, 8), 255, dtype=np.uint8)
    levels = np.full((8, 1), 127, dtype=np.int8)
    assert pairwise_saturating_kernel(codes, levels)[0] != exact_kernel(codes, levels)[0]


def near_ties_and_long_tail(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    """Hundreds of vectors within 1e-4 of one another (ties the bound must not split), a
    heavy-tailed spread around a few centres, and some vectors with one huge component (the
    codes' coarsest scale)."""
    centre = unit(rng.normal(size=(1, dim)))
    ties = unit(centre + 1e-4 * rng.normal(size=(count // 4, dim)))
    centres = unit(rng.normal(size=(5, dim)))
    tail = rng.standard_t(1.5, size=(count // 2, 1))
    spread = unit(
        centres[rng.integers(0, 5, count // 2)] + 0.05 * tail * rng.normal(size=(count // 2, dim))
    )
    spiky = rng.normal(size=(count - count // 4 - count // 2, dim))
    spiky[:, 0] += 40.0
    return np.vstack([ties, spread, unit(spiky)]).astype(np.float32)


@pytest.mark.parametrize("kernel", KERNELS)
def test_scan_under_each_kernel_matches_brute_force(
    kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(12)
    count, dim = 4000, 384
    vectors = near_ties_and_long_tail(rng, count, dim)
    index = VectorIndex(dim, int8_scan_from=0)
    index.add(np.arange(count), vectors)
    monkeypatch.setattr(int8scan, "dot_codes", KERNELS[kernel])
    queries = np.vstack([vectors[:3], vectors[count // 4 : count // 4 + 3] + 1e-3])
    queries = np.vstack([queries, unit(rng.normal(size=(3, dim)))])
    for query in queries:
        exact = vectors @ unit(query)
        for k in (1, 10, 100):
            found, scores = index.search(query, k)
            np.testing.assert_allclose(scores, np.sort(exact)[::-1][:k], atol=1e-5)
            np.testing.assert_allclose(exact[found], scores, atol=1e-6)


def test_a_scan_that_is_not_exact_here_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's kernel is compared with numpy's integers before the codes are scanned:
    a kernel that is off (here: one that sums in 16 bits throughout) is refused, and searches
    scan the float32 matrix instead."""

    def sixteen_bit(codes: np.ndarray, levels: np.ndarray) -> np.ndarray:
        return np.clip(exact_kernel(codes, levels), -32768, 32767)

    monkeypatch.setattr(int8scan, "_scan_checked", None)
    monkeypatch.setattr(int8scan, "dot_codes", sixteen_bit)
    problem = int8scan.scan_problem()
    assert problem.startswith("its integer products differ from numpy's on this CPU")
    called: list[int] = []
    monkeypatch.setattr(int8scan, "dot_codes", lambda codes, levels: called.append(1))
    rng = np.random.default_rng(2)
    vectors = unit(rng.normal(size=(300, 16)))
    index = VectorIndex(16, int8_scan_from=0)
    index.add(np.arange(300), vectors)
    assert index.scan_kernel.startswith("float32")
    found, _ = index.search(vectors[7], 1)
    assert found.tolist() == [7] and called == []


def test_the_scan_running_here_is_exact_or_refused() -> None:
    """On the machine at hand: the real kernel gives numpy's integers on the query levels it
    is given, or the scan is refused here; never an inexact scan in use."""
    rng = np.random.default_rng(9)
    codes = extreme_codes(rng, 384)
    levels = rng.integers(-63, 64, (384, 1), dtype=np.int8)
    exact = np.array_equal(int8scan.dot_codes(codes, levels), exact_kernel(codes, levels))
    assert exact == (int8scan.scan_problem() == "")

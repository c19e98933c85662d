"""An exact in-memory cosine index over L2-normalised float32 vectors, updated in place."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import numpy as np

from memory_console.embed import int8scan

_MIN_CAPACITY = 1024
# From this many rows a search scans the 8-bit codes and scores only the candidates exactly.
INT8_SCAN_FROM = 16384
# When more rows than this share are candidates (vectors too alike for the bound to prune),
# one exact float32 product is cheaper than gathering them.
_CANDIDATE_FRACTION = 0.1
_NORMALISE_CHUNK_ROWS = 65536
# Below this share of the rows, a filtered search scores only the allowed rows; above it one
# sequential product over the whole matrix beats the random-access gather.
_GATHER_FRACTION = 0.2
# A scan of the 8-bit codes costs about what gathering this share of the float32 rows does.
_GATHER_FRACTION_BESIDE_CODES = 0.07
# Allowed rows are gathered in blocks small enough to stay in cache while they are scored.
_GATHER_BLOCK_ROWS = 1024


class VectorIndex:
    """Exact top-k cosine search over (id, vector) pairs, kept in step by add() and remove().

    Rows live in one contiguous float32 matrix whose first len(self) rows are all live: a removal
    moves the last rows into the holes, so a search never meets a dead row and the matrix never
    needs rebuilding. Capacity doubles when full. Ids map to rows through a sorted id array
    (vectorised searchsorted look-ups), so any int64 ids work. Vectors are L2-normalised on the
    way in, so scores are cosine similarities. Thread-safe: one lock guards reads and writes.

    Beside the float32 matrix each row has 8-bit codes (see int8scan.py). From int8_scan_from
    rows on, a search scans the codes, keeps every row whose approximate score is within twice
    the error bound of the k-th best, and ranks those by their exact float32 scores: the result
    is the exact top k, for a quarter of the memory traffic.

    Each row can also carry `labels` small integers (SemanticIndex stores a memory's owner and
    topic there), so that a search can keep the rows with given labels without an id set.
    """

    def __init__(
        self, dim: int, capacity: int = 0, int8_scan_from: int = INT8_SCAN_FROM, labels: int = 0
    ) -> None:
        if dim < 1:
            raise ValueError(f"dim must be positive, not {dim}")
        if labels < 0:
            raise ValueError(f"labels must be 0 or more, not {labels}")
        self._dim = dim
        self._labels_per_row = labels
        self._lock = threading.RLock()
        self._count = 0
        self._int8_scan_from = int8_scan_from
        # One row of each per vector: its float32 values, 8-bit codes, their scale and rounding
        # error, its labels and its id.
        (
            self._matrix,
            self._codes,
            self._code_scales,
            self._code_errors,
            self._labels,
            self._id_of_row,
        ) = self._blank_rows(max(capacity, 0))
        # An upper bound of the live rows' code errors: a removal may leave it high, never low.
        self._max_code_error = 0.0
        self._sorted_ids = np.empty(0, dtype=np.int64)
        self._row_of_sorted = np.empty(0, dtype=np.int64)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def scan_kernel(self) -> str:
        """Which scan a full search runs at the present size (for an operator's --verbose)."""
        if self._count >= self._int8_scan_from and not int8scan.scan_problem():
            return "int8 codes (onnxruntime MatMulInteger), exact float32 rescoring"
        return "float32 matrix product (numpy)"

    @property
    def capacity(self) -> int:
        return self._matrix.shape[0]

    @property
    def nbytes(self) -> int:
        """Bytes held by the matrix and the 8-bit codes (at capacity) and the id maps."""
        return (
            self._matrix.nbytes
            + self._codes.nbytes
            + self._code_scales.nbytes
            + self._code_errors.nbytes
            + self._labels.nbytes
            + self._id_of_row.nbytes
            + self._sorted_ids.nbytes
            + self._row_of_sorted.nbytes
        )

    def __len__(self) -> int:
        return self._count

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, int | np.integer) or isinstance(item, bool):
            return False
        with self._lock:
            found, _ = self._rows_of(np.array([item], dtype=np.int64))
            return bool(found[0])

    def known(self, ids: Iterable[int] | np.ndarray) -> np.ndarray:
        """Whether each id has a vector here (one vectorised lookup for many)."""
        with self._lock:
            return self._rows_of(_as_ids(ids))[0]

    def __repr__(self) -> str:
        return f"VectorIndex(dim={self._dim}, len={self._count}, capacity={self.capacity})"

    def ids(self) -> np.ndarray:
        """All ids in the index, ascending."""
        with self._lock:
            return self._sorted_ids.copy()

    def get(self, ids: Iterable[int] | np.ndarray) -> np.ndarray:
        """The stored (normalised) vectors of ids, in the given order; KeyError if one is absent."""
        wanted = _as_ids(ids)
        with self._lock:
            found, rows = self._rows_of(wanted)
            if not found.all():
                raise KeyError(int(wanted[~found][0]))
            return self._matrix[rows]

    def reserve(self, capacity: int) -> None:
        """Grow the matrix to hold at least capacity vectors without further copies."""
        with self._lock:
            if capacity > self.capacity:
                self._grow_to(capacity)

    def add(
        self,
        ids: Iterable[int] | np.ndarray,
        vectors: np.ndarray,
        labels: np.ndarray | None = None,
    ) -> None:
        """Insert or replace vectors (and their labels, -1 when not given) by id; within one
        call the last vector of an id wins."""
        new_ids = _as_ids(ids)
        matrix_in = np.asarray(vectors, dtype=np.float32)
        if matrix_in.ndim == 1 and new_ids.size == 1:
            matrix_in = matrix_in[None, :]
        if matrix_in.shape != (new_ids.size, self._dim):
            raise ValueError(
                f"vectors must have shape ({new_ids.size}, {self._dim}), not {matrix_in.shape}"
            )
        labels_in = self._labels_of(labels, new_ids.size)
        if new_ids.size == 0:
            return
        order = np.argsort(new_ids, kind="stable")
        sorted_ids = new_ids[order]
        is_last = np.append(sorted_ids[1:] != sorted_ids[:-1], True)
        if not is_last.all():
            new_ids, matrix_in = sorted_ids[is_last], matrix_in[order[is_last]]
            labels_in = labels_in[order[is_last]]
        with self._lock:
            found, rows = self._rows_of(new_ids)
            if found.any():
                self._matrix[rows[found]] = _normalised(matrix_in[found])
                self._quantize(rows[found])
                self._labels[rows[found]] = labels_in[found]
            fresh = ~found
            fresh_count = int(fresh.sum())
            if fresh_count == 0:
                return
            start, stop = self._count, self._count + fresh_count
            if stop > self.capacity:
                self._grow_to(max(stop, 2 * self.capacity, _MIN_CAPACITY))
            fresh_ids = new_ids[fresh]
            self._matrix[start:stop] = matrix_in[fresh] if fresh_count < new_ids.size else matrix_in
            _normalise_in_place(self._matrix[start:stop])
            self._quantize(slice(start, stop))
            self._labels[start:stop] = labels_in[fresh]
            self._id_of_row[start:stop] = fresh_ids
            fresh_rows = np.arange(start, stop, dtype=np.int64)
            order = np.argsort(fresh_ids, kind="stable")
            positions = np.searchsorted(self._sorted_ids, fresh_ids[order])
            self._sorted_ids = np.insert(self._sorted_ids, positions, fresh_ids[order])
            self._row_of_sorted = np.insert(self._row_of_sorted, positions, fresh_rows[order])
            self._count = stop

    def set_labels(self, ids: Iterable[int] | np.ndarray, labels: np.ndarray) -> None:
        """Replace the labels of ids (absent ones are ignored)."""
        wanted = _as_ids(ids)
        labels_in = self._labels_of(labels, wanted.size)
        with self._lock:
            found, rows = self._rows_of(wanted)
            self._labels[rows[found]] = labels_in[found]

    def _labels_of(self, labels: np.ndarray | None, count: int) -> np.ndarray:
        shape = (count, self._labels_per_row)
        if labels is None:
            return np.full(shape, -1, dtype=np.int32)
        array = np.asarray(labels, dtype=np.int32)
        if array.shape != shape:
            raise ValueError(f"labels must have shape {shape}, not {array.shape}")
        return array

    def remove(self, ids: Iterable[int] | np.ndarray) -> int:
        """Remove ids (absent ones are ignored); returns how many were removed."""
        gone_ids = _sorted_unique(_as_ids(ids))
        with self._lock:
            found, rows = self._rows_of(gone_ids)
            gone_rows = rows[found]
            removed = gone_rows.size
            if removed == 0:
                return 0
            new_count = self._count - removed
            # Live rows from the tail fill the holes left below the new end.
            holes = np.sort(gone_rows[gone_rows < new_count])
            tail = np.arange(new_count, self._count, dtype=np.int64)
            movers = tail[~np.isin(tail, gone_rows, assume_unique=True)]
            keep = np.ones(self._sorted_ids.size, dtype=bool)
            keep[np.searchsorted(self._sorted_ids, gone_ids[found])] = False
            if holes.size:
                moved_ids = self._id_of_row[movers]
                for array in self._row_arrays():
                    array[holes] = array[movers]
                self._row_of_sorted[np.searchsorted(self._sorted_ids, moved_ids)] = holes
            self._sorted_ids = self._sorted_ids[keep]
            self._row_of_sorted = self._row_of_sorted[keep]
            for array, blank in zip(self._row_arrays(), self._blank_rows(1), strict=True):
                array[new_count : self._count] = blank[0]
            self._count = new_count
            if new_count == 0:
                self._max_code_error = 0.0
            return removed

    def search(
        self,
        query: np.ndarray,
        k: int,
        allowed_ids: Iterable[int] | np.ndarray | None = None,
        labels: Iterable[tuple[int, int]] = (),
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k ids most cosine-similar to query, best first, as (int64 ids, float32 scores).

        allowed_ids, when given, limits the candidates before ranking (filters such as owner,
        topic or status arrive here as an id set); ids not in the index are ignored. labels,
        (column, value) pairs, keeps only the rows whose labels have those values. Equal
        scores are ordered by ascending id.
        """
        vector = unit_query(query, self._dim)
        with self._lock:
            rows: np.ndarray | None = None
            if allowed_ids is not None:
                found, candidate_rows = self._rows_of(_as_ids(allowed_ids))
                rows = _sorted_unique(candidate_rows[found])
            keep: np.ndarray | None = None
            for column, value in labels:
                matches = self._labels[: self._count, column] == value
                keep = matches if keep is None else keep & matches
            if keep is not None:
                labelled = np.flatnonzero(keep)
                rows = labelled if rows is None else rows[keep[rows]]
            size = self._count if rows is None else rows.size
            k = min(max(k, 0), size)
            if k == 0:
                return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
            # The codes only where their products are exact on this CPU (checked once).
            codes = self._count >= self._int8_scan_from and not int8scan.scan_problem()
            gather_below = (
                _GATHER_FRACTION_BESIDE_CODES if codes else _GATHER_FRACTION
            ) * self._count
            if rows is not None and rows.size < gather_below:
                return self._top(self._scores_of_rows(rows, vector), rows, k)
            if codes:
                result = self._search_codes(vector, k, rows)
                if result is not None:
                    return result
            scores = self._matrix[: self._count] @ vector
            return self._top(scores if rows is None else scores[rows], rows, k)

    def _search_codes(
        self, vector: np.ndarray, k: int, rows: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Exact top k through the 8-bit codes; None when the bound prunes too little."""
        query = int8scan.quantize_query(vector)
        if query is None:
            return None
        levels, query_scale, query_error = query
        approximate = int8scan.dot_codes(self._codes[: self._count], levels).astype(np.float32)
        approximate *= self._code_scales[: self._count]
        approximate *= np.float32(query_scale)
        if rows is not None:
            approximate = approximate[rows]
        bound = query_error + self._max_code_error * (1.0 + query_error) + int8scan.BOUND_SLACK
        kth = np.partition(approximate, approximate.size - k)[approximate.size - k]
        candidates = np.flatnonzero(approximate >= np.float32(kth - 2.0 * bound))
        if candidates.size > _CANDIDATE_FRACTION * approximate.size and candidates.size > 4 * k:
            return None
        if rows is not None:
            candidates = rows[candidates]
        return self._top(self._scores_of_rows(candidates, vector), candidates, k)

    def _top(
        self, scores: np.ndarray, rows: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k best of scores (of rows, or of rows 0..n when rows is None), best first."""
        if k < scores.size:
            top = np.argpartition(scores, scores.size - k)[scores.size - k :]
            kth = scores[top].min()
            tied = np.flatnonzero(scores == kth)
            if tied.size > 1:
                # Rows tied with the k-th score compete by id, smallest first.
                above = top[scores[top] > kth]
                tied_ids = self._id_of_row[tied if rows is None else rows[tied]]
                chosen = tied[np.argsort(tied_ids, kind="stable")[: k - above.size]]
                top = np.concatenate([above, chosen])
        else:
            top = np.arange(scores.size)
        top_rows = top if rows is None else rows[top]
        top_ids = self._id_of_row[top_rows]
        top_scores = scores[top]
        order = np.lexsort((top_ids, -top_scores))
        return top_ids[order], top_scores[order].astype(np.float32, copy=False)

    def _quantize(self, rows: slice | np.ndarray) -> None:
        """Recompute the 8-bit codes of rows from the (normalised) matrix."""
        if isinstance(rows, slice):
            codes, scales, errors = (
                self._codes[rows],
                self._code_scales[rows],
                self._code_errors[rows],
            )
            int8scan.quantize_rows(self._matrix[rows], codes, scales, errors)
        else:
            count = rows.size
            codes = np.empty((count, self._dim), dtype=np.uint8)
            scales = np.empty(count, dtype=np.float32)
            errors = np.empty(count, dtype=np.float32)
            int8scan.quantize_rows(self._matrix[rows], codes, scales, errors)
            self._codes[rows], self._code_scales[rows], self._code_errors[rows] = (
                codes,
                scales,
                errors,
            )
        if errors.size:
            self._max_code_error = max(self._max_code_error, float(errors.max()))

    def _scores_of_rows(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        scores = np.empty(rows.size, dtype=np.float32)
        block = np.empty((min(rows.size, _GATHER_BLOCK_ROWS), self._dim), dtype=np.float32)
        for start in range(0, rows.size, _GATHER_BLOCK_ROWS):
            part = rows[start : start + _GATHER_BLOCK_ROWS]
            rows_block = block[: part.size]
            np.take(self._matrix, part, axis=0, out=rows_block, mode="clip")
            np.dot(rows_block, vector, out=scores[start : start + part.size])
        return scores

    def _rows_of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, row of each id; meaningless where not found)."""
        if self._sorted_ids.size == 0:
            return np.zeros(ids.size, dtype=bool), np.zeros(ids.size, dtype=np.int64)
        positions = np.searchsorted(self._sorted_ids, ids)
        np.minimum(positions, self._sorted_ids.size - 1, out=positions)
        found = self._sorted_ids[positions] == ids
        return found, self._row_of_sorted[positions]

    def _blank_rows(self, capacity: int) -> tuple[np.ndarray, ...]:
        """Per-row arrays of capacity rows holding no vector (codes of zeros, labels and id -1),
        in the order of _row_arrays()."""
        return (
            np.zeros((capacity, self._dim), dtype=np.float32),
            np.full((capacity, self._dim), int8scan.ZERO_POINT, dtype=np.uint8),
            np.ones(capacity, dtype=np.float32),
            np.zeros(capacity, dtype=np.float32),
            np.full((capacity, self._labels_per_row), -1, dtype=np.int32),
            np.full(capacity, -1, dtype=np.int64),
        )

    def _row_arrays(self) -> tuple[np.ndarray, ...]:
        return (
            self._matrix,
            self._codes,
            self._code_scales,
            self._code_errors,
            self._labels,
            self._id_of_row,
        )

    def _grow_to(self, capacity: int) -> None:
        grown = self._blank_rows(capacity)
        for new, old in zip(grown, self._row_arrays(), strict=True):
            new[: self._count] = old[: self._count]
        (
            self._matrix,
            self._codes,
            self._code_scales,
            self._code_errors,
            self._labels,
            self._id_of_row,
        ) = grown


def _as_ids(ids: Iterable[int] | np.ndarray) -> np.ndarray:
    array = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids))
    if array.size == 0:
        return np.empty(0, dtype=np.int64)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError("ids must be a one-dimensional array of integers")
    return array.astype(np.int64, copy=False)


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique for int64 arrays, by one sort (numpy 2's np.unique is slower here)."""
    ordered = np.sort(values)
    if ordered.size < 2:
        return ordered
    return ordered[np.append(True, ordered[1:] != ordered[:-1])]


def _normalised(vectors: np.ndarray) -> np.ndarray:
    result = np.array(vectors, dtype=np.float32, copy=True)
    _normalise_in_place(result)
    return result


def _normalise_in_place(vectors: np.ndarray) -> None:
    """Scale rows to unit length in chunks (no full-size temporary); zero rows stay zero."""
    for start in range(0, vectors.shape[0], _NORMALISE_CHUNK_ROWS):
        chunk = vectors[start : start + _NORMALISE_CHUNK_ROWS]
        norms = np.sqrt(np.einsum("ij,ij->i", chunk, chunk))
        norms[norms == 0.0] = 1.0
        chunk /= norms[:, None]


def unit_query(query: np.ndarray, dim: int) -> np.ndarray:
    """A query as one float32 row of length `dim`, L2-normalised (a zero query stays zero)."""
    vector = np.asarray(query, dtype=np.float32).reshape(-1)
    if vector.size != dim:
        raise ValueError(f"query must have {dim} dimensions, not {vector.size}")
    norm = float(np.linalg.norm(vector))
    return vector / np.float32(norm) if norm > 0.0 else vector

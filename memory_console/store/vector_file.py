"""The vector index file beside a store: every active memory's vector, memory-mapped.

`STORE.db-vectors` holds, after a header, ids int64[n] (ascending), scope labels int32[n, 2]
(owner and topic codes) and unit vectors float32[n, dim]. The header names the store (its
random identity in console_meta), the model, dim, n, the vector_log position the rows are
current to, the owner and topic code tables, a checksum of the ids and labels, and its own
checksum. At open the file is trusted only when all of that matches the store; the log entries
after its position name the rows to mask and read again from SQLite (docs/ARCHITECTURE.md,
"The vector index file").
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import secrets
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_console.files import sync_directory
from memory_console.store.records import chunks
from memory_console.store.vector_log import changed_since, log_bounds, trim_log

if TYPE_CHECKING:
    from memory_console.store.door import Door

SUFFIX = "-vectors"
MAGIC = b"MCVECIDX"
FORMAT_VERSION = 1
PREFIX = struct.Struct("<8sII")  # magic, format version, crc32 of the header's JSON body
HEADER_BYTES = 4096  # the prefix and a JSON body of scalars, zero-padded
ALIGN = 4096  # the vectors start on a page boundary (mmap, madvise)
SCOPE = ("owner", "topic")
BUILD_BATCH = 4_096  # rows read from SQLite and written per step while building (6 MiB)
# The file is rewritten once the rows changed since it was written pass this share of it
# (or REWRITE_MIN_ROWS): until then each open reads them from SQLite into a small overlay.
REWRITE_SHARE = 0.02
REWRITE_MIN_ROWS = 2_000


class VectorFileError(Exception):
    """The file is not a whole vector index file of this format."""


def vector_path(store_path: Path) -> Path:
    return Path(f"{store_path}{SUFFIX}")


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each part lies in a file of `count` rows of `dim` floats: the header, ids, labels,
    vectors (page-aligned), then the owner and topic code tables as JSON."""

    count: int
    dim: int
    codes_bytes: int = 0

    @property
    def ids(self) -> int:
        return HEADER_BYTES

    @property
    def labels(self) -> int:
        return HEADER_BYTES + 8 * self.count

    @property
    def vectors(self) -> int:
        return -(-(self.labels + 4 * len(SCOPE) * self.count) // ALIGN) * ALIGN

    @property
    def codes(self) -> int:
        return self.vectors + 4 * self.dim * self.count

    @property
    def size(self) -> int:
        return self.codes + self.codes_bytes


@dataclass(slots=True)
class VectorFile:
    """One mapped vector index file: read-only views of its arrays."""

    path: Path
    layout: Layout
    store_id: str
    model_id: str
    position: int  # the vector_log sequence number the rows are current to
    codes: dict[str, list[str]]  # owner and topic values, by code
    ids: np.ndarray
    labels: np.ndarray
    vectors: np.ndarray
    mapped: mmap.mmap = field(repr=False)

    @property
    def dim(self) -> int:
        return self.layout.dim

    def __len__(self) -> int:
        return self.layout.count

    def release(self, start_row: int, stop_row: int) -> None:
        """Drop these vector rows' pages from this process's memory (the page cache keeps
        them), so that a scan of a million rows holds one chunk at a time."""
        if stop_row <= start_row:
            return
        width = 4 * self.dim
        start = (self.layout.vectors + start_row * width) // mmap.PAGESIZE * mmap.PAGESIZE
        stop = min(self.layout.vectors + stop_row * width, len(self.mapped))
        with contextlib.suppress(OSError, ValueError):
            self.mapped.madvise(mmap.MADV_DONTNEED, start, stop - start)


def _crc(*parts: bytes | np.ndarray) -> int:
    value = 0
    for part in parts:
        value = zlib.crc32(part if isinstance(part, bytes) else part.data, value)
    return value


def read_file(path: Path) -> VectorFile:
    """Map a vector index file, checking its header, size and the checksum of its ids, labels
    and code tables; raises VectorFileError for anything else (missing, truncated, corrupt,
    another format). The vectors themselves are not read here (a million rows: 1.5 GB)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as error:
        raise VectorFileError(f"{path}: {error.strerror}") from error
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, HEADER_BYTES, 0)
        if len(head) < HEADER_BYTES:
            raise VectorFileError(f"{path}: shorter than a header")
        magic, version, body_crc = PREFIX.unpack_from(head)
        if magic != MAGIC or version != FORMAT_VERSION:
            raise VectorFileError(f"{path}: not a vector index file of format {FORMAT_VERSION}")
        body = head[PREFIX.size :].rstrip(b"\0")
        if zlib.crc32(body) != body_crc:
            raise VectorFileError(f"{path}: header checksum mismatch")
        try:
            header: dict[str, Any] = json.loads(body)
            layout = Layout(int(header["count"]), int(header["dim"]), int(header["codes_bytes"]))
            position = int(header["position"])
        except (ValueError, KeyError, TypeError) as error:
            raise VectorFileError(f"{path}: unreadable header ({error})") from error
        if layout.dim < 1 or layout.count < 0 or size != layout.size:
            raise VectorFileError(f"{path}: {size} bytes, not the {layout.size} its header says")
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)  # the map holds the file open itself
    count, dim = layout.count, layout.dim
    ids = np.frombuffer(mapped, np.int64, count=count, offset=layout.ids)
    labels = np.frombuffer(mapped, np.int32, count=count * len(SCOPE), offset=layout.labels)
    codes_json = mapped[layout.codes : layout.size]
    if _crc(ids, labels, codes_json) != header.get("rows_crc"):
        raise VectorFileError(f"{path}: id, label or code table checksum mismatch")
    try:
        codes = {name: [str(v) for v in json.loads(codes_json)[name]] for name in SCOPE}
    except (ValueError, KeyError, TypeError) as error:
        raise VectorFileError(f"{path}: unreadable code tables ({error})") from error
    vectors = np.frombuffer(mapped, np.float32, count=count * dim, offset=layout.vectors)
    return VectorFile(
        path,
        layout,
        str(header.get("store_id")),
        str(header.get("model_id")),
        position,
        codes,
        ids,
        labels.reshape(count, len(SCOPE)),
        vectors.reshape(count, dim),
        mapped,
    )


class _Writer:
    """A new vector index file of `count` rows under a temporary name beside the target,
    filled in ascending id order, then synced and renamed over the target: a reader that has
    the old file mapped keeps it (the rename leaves its inode alive) until it lets go."""

    def __init__(self, target: Path, count: int, dim: int) -> None:
        self.target = target
        self.temporary = target.with_name(f"{target.name}.{secrets.token_hex(6)}.tmp")
        self.layout = Layout(count, dim)
        self.rows = 0
        self.ids = np.empty(count, np.int64)
        self.labels = np.empty((count, len(SCOPE)), np.int32)
        self.codes: dict[str, dict[str, int]] = {name: {} for name in SCOPE}
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self.fd = os.open(self.temporary, flags, 0o600)

    def add(self, ids: np.ndarray, vectors: np.ndarray, scopes: Sequence[tuple[str, str]]) -> None:
        """Append rows (ids ascending, above those added before); vectors are normalised."""
        size, dim = ids.size, self.layout.dim
        end = self.rows + size
        if end > self.layout.count:
            raise ValueError("more rows than the file was sized for")
        self.ids[self.rows : end] = ids
        for column, name in enumerate(SCOPE):
            codes = self.codes[name]
            self.labels[self.rows : end, column] = [
                codes.setdefault(scope[column], len(codes)) for scope in scopes
            ]
        matrix = np.array(vectors, dtype=np.float32, copy=True).reshape(size, dim)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        norms[norms == 0.0] = 1.0
        matrix /= norms[:, None]
        os.pwrite(self.fd, matrix.tobytes(), self.layout.vectors + 4 * dim * self.rows)
        self.rows = end

    def finish(self, store_id: str, model_id: str, position: int) -> Path:
        """Write the header, ids, labels and code tables, sync, rename over the target."""
        if self.rows != self.layout.count:
            raise ValueError(f"{self.rows} rows written, {self.layout.count} expected")
        ids, labels = self.ids, self.labels
        if ids.size > 1 and not (ids[1:] > ids[:-1]).all():
            raise ValueError("vector file rows must come in ascending id order")
        codes_json = json.dumps(
            {name: list(self.codes[name]) for name in SCOPE}, ensure_ascii=False
        ).encode()
        layout = Layout(self.layout.count, self.layout.dim, len(codes_json))
        body = json.dumps(
            {
                "store_id": store_id,
                "model_id": model_id,
                "dim": layout.dim,
                "count": layout.count,
                "position": position,
                "codes_bytes": len(codes_json),
                "rows_crc": _crc(ids, labels, codes_json),
            },
            ensure_ascii=False,
        ).encode()
        if PREFIX.size + len(body) > HEADER_BYTES:
            raise ValueError("vector file header too long")
        header = PREFIX.pack(MAGIC, FORMAT_VERSION, zlib.crc32(body)) + body
        os.pwrite(self.fd, header.ljust(HEADER_BYTES, b"\0"), 0)
        os.pwrite(self.fd, ids.tobytes() + labels.tobytes(), layout.ids)
        os.pwrite(self.fd, codes_json, layout.codes)
        os.ftruncate(self.fd, layout.size)
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1
        os.replace(self.temporary, self.target)
        sync_directory(self.target)
        return self.target

    def abandon(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.temporary.unlink(missing_ok=True)


# -- reading what the file misses, and building it --------------------------------------------

# Vectors of another length than the model's dim are damage (store/check.py reports them).
ACTIVE_VECTORS = (
    "FROM embedding e JOIN memory m ON m.id = e.memory_id "
    "WHERE m.status = 'active' AND e.model_id = ? AND length(e.vector) = ?"
)


def store_identity(store: Door) -> str:
    return store.meta("store_id") or ""


def rows_of(
    store: Door, model_id: str, dim: int, ids: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str]]]:
    """(ids, vectors, scopes) of those of `ids` that are active with a vector of this model."""
    found_ids: list[int] = []
    blobs: list[bytes] = []
    scopes: list[tuple[str, str]] = []
    for chunk, marks in chunks([int(i) for i in ids]):
        for ident, vector, owner, topic in store.connection.execute(
            f"SELECT e.memory_id, e.vector, m.owner, m.topic {ACTIVE_VECTORS} "
            f"AND e.memory_id IN ({marks})",
            [model_id, 4 * dim, *chunk],
        ):
            found_ids.append(ident)
            blobs.append(vector)
            scopes.append((owner, topic))
    matrix = np.frombuffer(b"".join(blobs), np.float32).reshape(len(blobs), dim)
    return np.asarray(found_ids, np.int64), matrix, scopes


def build(store: Door, model_id: str, dim: int) -> Path:
    """Write the vector index file from the store's vectors (one read snapshot, streamed in
    batches so memory stays small), then trim the log entries no file needs any more."""
    store.require_writable("writing the vector index file")
    target = vector_path(store.path)
    with store.lock:
        with store.snapshot():
            conn = store.connection
            _, position = log_bounds(conn)
            store_id = store_identity(store)
            count = conn.execute(f"SELECT count(*) {ACTIVE_VECTORS}", (model_id, 4 * dim))
            writer = _Writer(target, int(count.fetchone()[0]), dim)
            try:
                cursor = conn.execute(
                    f"SELECT e.memory_id, e.vector, m.owner, m.topic {ACTIVE_VECTORS} "
                    "ORDER BY e.memory_id",
                    (model_id, 4 * dim),
                )
                while rows := cursor.fetchmany(BUILD_BATCH):
                    writer.add(
                        np.fromiter((row[0] for row in rows), np.int64, len(rows)),
                        np.frombuffer(b"".join(row[1] for row in rows), np.float32),
                        [(row[2], row[3]) for row in rows],
                    )
            except BaseException:
                writer.abandon()
                raise
        try:
            writer.finish(store_id, model_id, position)
        except BaseException:
            writer.abandon()
            raise
        with store.transaction("trimming the vector log") as conn:
            trim_log(conn, position)
    return target


@dataclass(slots=True)
class Opened:
    """A valid vector index file with what changed since it was written, as SQLite holds it
    now: the changed ids (to mask in the file) and the current rows of those still indexed."""

    file: VectorFile
    changed: np.ndarray
    ids: np.ndarray
    vectors: np.ndarray
    scopes: list[tuple[str, str]]
    built: bool = False  # written by this open


def why_stale(store: Door, file: VectorFile, model_id: str, dim: int) -> str | None:
    """Why a sound file is not this store's index (None: it is). Runs in a read snapshot."""
    if file.store_id != store_identity(store):
        return "another store's file"
    if file.model_id != model_id or file.dim != dim:
        return f"vectors of {file.model_id} ({file.dim}), not {model_id} ({dim})"
    low, high = log_bounds(store.connection)
    if file.position > high:
        return "newer than the store's last logged change (the store was replaced)"
    if low and file.position < low - 1:
        return "older than the changes the store still logs"
    return None


def overlay_bound(file: VectorFile) -> int:
    """How many changes since a file was written an overlay holds; a writable store writes
    the file anew beyond it."""
    return max(REWRITE_MIN_ROWS, int(REWRITE_SHARE * len(file)))


def _open_valid(
    store: Door, model_id: str, dim: int, *, rewriting: bool = False
) -> tuple[Opened | None, str]:
    """rewriting: the caller writes the file anew when more than overlay_bound() changed,
    so the changed rows are not read then (after a sync of 100,000 memories they were all
    of them: 290 MB read to be thrown away)."""
    try:
        file = read_file(vector_path(store.path))
    except VectorFileError as error:
        return None, str(error)
    with store.lock, store.snapshot():
        problem = why_stale(store, file, model_id, dim)
        if problem is None:
            changed = changed_since(store.connection, file.position)
            scopes: list[tuple[str, str]] = []
            if rewriting and len(changed) > overlay_bound(file):
                ids, vectors = np.empty(0, np.int64), np.empty((0, dim), np.float32)
            else:
                ids, vectors, scopes = rows_of(store, model_id, dim, changed)
    if problem is not None:
        return None, problem
    return Opened(file, np.asarray(sorted(changed), np.int64), ids, vectors, scopes), ""


def open_index(store: Door, model_id: str, dim: int) -> tuple[Opened | None, str]:
    """The store's vector index file and what it misses, or (None, why) when there is no valid
    one. A writable store writes a new file when there is none, it is stale or foreign, or
    more has changed since it was written than an overlay should hold; a read-only store
    never writes one, nor does a store inside a write transaction. A failed write (a full
    disk) leaves the file as it was."""
    # Inside a write transaction the log holds changes that may yet roll back (and their
    # numbers be reused): a file written from them could later be taken for current.
    writable = not (store.read_only or store.connection.in_transaction)
    opened, why = _open_valid(store, model_id, dim, rewriting=writable)
    if opened is None and why.startswith("older than"):
        # Replaced while we looked: once more.
        opened, why = _open_valid(store, model_id, dim, rewriting=writable)
    if not writable:
        return opened, why
    if opened is not None and opened.changed.size <= overlay_bound(opened.file):
        return opened, why
    try:
        build(store, model_id, dim)
    except OSError as error:
        return opened, f"cannot write {vector_path(store.path)}: {error.strerror or error}"
    rebuilt, why = _open_valid(store, model_id, dim)
    if rebuilt is not None:
        rebuilt.built = True
    return rebuilt, why


# -- erasure -------------------------------------------------------------------------------


def _overwrite_and_remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        size = path.stat().st_size
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            block = bytes(min(size, 1 << 20))
            for start in range(0, size, max(len(block), 1)):
                os.pwrite(fd, block[: size - start], start)
            os.fsync(fd)
        finally:
            os.close(fd)
        path.unlink()


def erase_rows(store_path: Path, ids: Sequence[int]) -> None:
    """Overwrite the vectors of `ids` in the index file with zeros and sync it (a reader that
    has it mapped sees zero vectors, which the log masks anyway). A file that cannot be read
    as one, and temporary files of builds that never finished, are zeroed whole and removed."""
    path = vector_path(store_path)
    doomed = sorted(path.parent.glob(f"{path.name}.*.tmp"))
    try:
        file = read_file(path)
    except VectorFileError:
        if path.is_file():
            doomed.append(path)
    else:
        rows = np.flatnonzero(np.isin(file.ids, np.asarray(list(ids), np.int64)))
        width = 4 * file.dim
        zeros = bytes(width)
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            for row in rows.tolist():
                os.pwrite(fd, zeros, file.layout.vectors + row * width)
            os.fsync(fd)
        finally:
            os.close(fd)
    for stale in doomed:
        _overwrite_and_remove(stale)


# -- state, for an operator ------------------------------------------------------------------


def state(store: Door, model_id: str, dim: int) -> dict[str, Any]:
    """What the store's vector index file is, checked as an open would but writing nothing:
    its path and size, and whether it is absent, damaged, stale (why) or current (its rows,
    model and the changes since it was written, which an open reads from SQLite)."""
    path = vector_path(store.path)
    out: dict[str, Any] = {"path": str(path)}
    if not path.exists():
        return {**out, "state": "absent", "why": "written by the first semantic search"}
    try:
        file = read_file(path)
    except VectorFileError as error:
        return {**out, "state": "damaged", "why": str(error)}
    out.update(bytes=file.layout.size, rows=len(file), model_id=file.model_id, dim=file.dim)
    with store.lock, store.snapshot():
        problem = why_stale(store, file, model_id, dim)
        changed = 0 if problem else len(changed_since(store.connection, file.position))
    if problem:
        return {**out, "state": "stale", "why": f"{problem}; rebuilt at the next open"}
    return {**out, "state": "current", "changed_since": changed}

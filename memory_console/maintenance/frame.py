"""The working arrays of a plan: the loaded memories, updated by each pass so the next sees it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_console.maintenance.changes import ChangeSet, NewMemory
from memory_console.policies import maintainable
from memory_console.store import bulk
from memory_console.store.validate import DEFAULTS

if TYPE_CHECKING:
    from memory_console.store import Store

UNKNOWN = "?"
_ARRAYS = frozenset(("ids", "revision", "touched", "_codes", "_values"))  # read lazily


class Frame:
    """Columns of the memories a plan looks at (one row per memory, in id order).

    Categorical columns (status, decay_policy, memory_type) are kept as vocabulary
    positions and handed out as string arrays, which the policy functions take; numeric
    columns are float or int arrays, last_accessed_at NaN for memories never accessed.
    `record(change_set)` writes a pass's proposals into the arrays, so a later pass of the
    same plan sees them (expire archives X, then decay leaves X alone). `add(memories)` gives
    the memories a pass creates rows of their own, under their negative keys, so the later
    passes decay, flag, count or archive them as a second run would.
    """

    def __init__(
        self,
        store: Store | None,
        columns: dict[str, np.ndarray] | Callable[[], dict[str, np.ndarray]],
        rows: bulk.Rows,
    ) -> None:
        """`columns`: the arrays, or what reads them when a pass first needs them."""
        self.store = store
        self.rows = rows
        self._vocab = {
            name: np.array([*values, UNKNOWN]) for name, values in bulk.CATEGORIES.items()
        }
        self._strings: dict[str, np.ndarray] = {}
        # Whether a pass has written into the arrays yet: until then they hold the store's
        # values as read, which a pass reading the store itself may rely on instead.
        self.changed = False
        self._unread: Callable[[], dict[str, np.ndarray]] | None = None
        if callable(columns):
            self._unread = columns
        else:
            self._unpack(columns)
        # (key, title, content, metadata JSON) of the memories passes created: texts that are
        # not in the store yet, which a closing pass reads as it reads the stored ones.
        self._created_texts: list[tuple[int, str, str, str]] = []
        # Hears what a pass has found so far (consolidate: each scope's merge groups), for a
        # caller that shows it before the plan is made.
        self.partial: Callable[[Any], None] | None = None

    def _unpack(self, columns: dict[str, np.ndarray]) -> None:
        self.ids = columns["id"]
        self.revision = columns["revision"]
        codes = columns["code"]
        self._codes = {name: bulk.decode(codes, name) for name in bulk.CATEGORIES}
        self._values: dict[str, np.ndarray] = {
            name: array for name, array in columns.items() if name not in ("id", "revision", "code")
        }
        self._values["is_protected"] = bulk.decode(codes, "is_protected")
        self.touched = np.zeros(self.ids.shape[0], dtype=np.bool_)

    def __getattr__(self, name: str) -> Any:
        # Only for attributes not set yet: the arrays of a frame whose rows are still unread.
        unread = self.__dict__.get("_unread")
        if unread is None or name not in _ARRAYS:
            raise AttributeError(name)
        self._unread = None
        self._unpack(unread())
        return getattr(self, name)

    @classmethod
    def load(
        cls, store: Store, rows: bulk.Rows, extra: Sequence[str] = (), *, lazily: bool = False
    ) -> Frame:
        """Read the selected rows (see store.bulk.Rows); call inside a snapshot. `lazily`: when
        a pass first needs them, inside the same snapshot (the consolidate pass reads one
        owner and topic at a time, and shows the first merges without waiting for them)."""
        if lazily:
            return cls(store, lambda: store.read(bulk.load_memory_arrays, rows, extra), rows)
        return cls(store, store.read(bulk.load_memory_arrays, rows, extra), rows)

    def read_count(self) -> int | None:
        """How many stored memories the frame read (None: no pass needed them)."""
        if "ids" not in self.__dict__:
            return None
        return int(np.count_nonzero(self.ids >= 0))

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def scope(self) -> str:
        """The scope the rows were selected from (store.bulk.SCOPES)."""
        return self.rows.scope

    def has(self, name: str) -> bool:
        return name in self._codes or name in self._values

    def column(self, name: str) -> np.ndarray:
        """A column as the policy functions take it (categorical ones as strings)."""
        if name in self._codes:
            if name not in self._strings:
                self._strings[name] = self._vocab[name][self._codes[name]]
            return self._strings[name]
        if name not in self._values and name in bulk.EXTRA_COLUMNS and self.store is not None:
            # Planning runs in one snapshot, so a late column lines up with the others.
            self._values[name] = self.store.read(bulk.load_column, self.rows, name)
        return self._values[name]

    def equals(self, name: str, value: str) -> np.ndarray:
        """Rows whose categorical column `name` is `value` (no string array built)."""
        vocabulary = bulk.CATEGORIES[name]
        if value not in vocabulary:
            return np.zeros(len(self), dtype=np.bool_)
        return self._codes[name] == vocabulary.index(value)

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Row positions of memory ids (which must be loaded)."""
        ident = np.asarray(ids, dtype=np.int64)
        found = np.searchsorted(self.ids, ident)
        if ident.size and (
            found.max() >= self.ids.shape[0] or not np.array_equal(self.ids[found], ident)
        ):
            raise KeyError("a pass proposed a change to a memory outside the plan's rows")
        return found

    def set(self, rows: np.ndarray, name: str, values: Any) -> None:
        """Write values into a column at the given rows (unloaded columns are skipped)."""
        self.changed = True
        if name in self._codes:
            self._strings.pop(name, None)
            vocabulary = bulk.CATEGORIES[name]
            lookup = {value: position for position, value in enumerate(vocabulary)}
            after = np.asarray(values, dtype=object)
            if after.ndim == 0:
                self._codes[name][rows] = lookup.get(str(after), len(vocabulary))
            else:
                self._codes[name][rows] = [
                    lookup.get(str(v), len(vocabulary)) for v in after.tolist()
                ]
        elif name in self._values:
            self._values[name][rows] = values

    def record(self, change_set: ChangeSet) -> None:
        """Apply a pass's proposals to the arrays and mark those memories touched."""
        rows = self.positions(change_set.ids)
        self.changed = True
        for name, (_, after) in change_set.values.items():
            self.set(rows, name, after)
        self.touched[rows] = True

    def add(self, memories: Sequence[NewMemory], now: float) -> None:
        """Rows for memories a pass creates, unset fields at the table's defaults (created at
        `now` unless told); rows stay in id order (the negative keys come first). Nothing is
        checked here: apply checks the memories it inserts."""
        if not memories:
            return
        self.changed = True
        self._created_texts += [
            (
                memory.key,
                str(memory.fields.get("title", "")),
                str(memory.fields.get("content", "")),
                metadata if isinstance(metadata, str) else json.dumps(metadata),
            )
            for memory in memories
            for metadata in [memory.fields.get("metadata", {})]
        ]
        if self.store is not None:
            # A late column could no longer be read in line with the rows: read them all now.
            for name in bulk.EXTRA_COLUMNS:
                self.column(name)
        rows: list[dict[str, Any]] = []
        for memory in memories:
            given = dict(memory.fields)
            # As the store completes a memory: either confidence stands for the other.
            start = given.get("confidence", given.get("base_confidence", DEFAULTS["confidence"]))
            rows.append(
                {**DEFAULTS, "confidence": start, "base_confidence": start, "created_at": now}
                | given
            )
        added: dict[str, list[Any]] = {name: [] for name in self._values}
        for row in rows:
            for name in added:
                value = bool(row[name]) if name == "is_protected" else row.get(name)
                added[name].append(np.nan if value is None else value)
        ids = np.concatenate([self.ids, np.array([m.key for m in memories], dtype=np.int64)])
        order = np.argsort(ids, kind="stable")
        self.ids = ids[order]
        self.revision = np.concatenate([self.revision, np.full(len(rows), -1)])[order]
        self.touched = np.concatenate([self.touched, np.zeros(len(rows), np.bool_)])[order]
        for name, column in self._values.items():
            extended = np.concatenate([column, np.array(added[name], dtype=column.dtype)])
            self._values[name] = extended[order]
        for name, codes in self._codes.items():
            lookup = {value: position for position, value in enumerate(bulk.CATEGORIES[name])}
            new = [lookup.get(str(row[name]), len(lookup)) for row in rows]
            self._codes[name] = np.concatenate([codes, np.array(new, dtype=codes.dtype)])[order]
        self._strings.clear()

    def texts(self) -> Iterator[tuple[int, str, str, str]]:
        """(id, title, content, metadata JSON) of every row: the created memories' first (their
        keys are negative), then the stored ones in id order, read as they are iterated."""
        if self.store is None:
            raise ValueError("reading memory texts needs the frame's store")
        yield from sorted(self._created_texts)
        yield from self.store.read(bulk.iter_texts, self.rows)

    def touched_revisions(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, revisions as loaded) of every stored memory some pass changed (a memory
        the plan creates has no revision to check)."""
        stored = self.touched & (self.ids >= 0)
        return self.ids[stored], self.revision[stored]

    def maintainable(self) -> np.ndarray:
        """Rows any pass may change: active, not protected, decay_policy not none."""
        return maintainable(
            self.column("status"), self.column("decay_policy"), self.column("is_protected")
        )

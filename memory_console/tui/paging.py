"""Keyset paging over the store for the memory table: one page in view, any page in ~1 query."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from memory_console.maintenance.forecast import confidences_now
from memory_console.store import Cursor, MemoryFilter, MemoryRecord, Store


@dataclass(frozen=True, slots=True)
class View:
    """What the table shows: filter and order (the query), not the rows."""

    memory_filter: MemoryFilter = MemoryFilter()
    sort: str = "last_accessed_at"
    descending: bool = True

    def with_filter(self, **values: Any) -> View:
        return replace(self, memory_filter=replace(self.memory_filter, **values))


@dataclass(frozen=True, slots=True)
class PageSlice:
    """One page of rows in view order.

    `after` is the cursor just before the first row (None on the first page), so reloading
    the page is one forward query; `has_next`/`has_previous` say whether the edges go on.
    """

    view: View
    rows: list[MemoryRecord]
    after: Cursor | None
    has_next: bool
    has_previous: bool
    number: int | None  # 1-based page number when known (counted from the first page)


def cursor_of(record: MemoryRecord, sort: str) -> Cursor:
    """The keyset cursor of a row under a sort column (booleans stored as 0/1)."""
    value = getattr(record, sort)
    if isinstance(value, bool):
        value = int(value)
    return Cursor(value, record.id)


class Pager:
    """Fetches pages of a View. Every method is one or two indexed queries, whatever the size
    of the store, so it runs in a worker and never holds the interface up."""

    def __init__(self, store: Store, page_size: int) -> None:
        self.store = store
        self.page_size = max(1, page_size)

    def forward(self, view: View, after: Cursor | None, number: int | None) -> PageSlice:
        """The page that starts just after `after` (None: the first page)."""
        page = self.store.page(
            view.memory_filter,
            sort=view.sort,
            descending=view.descending,
            after=after,
            limit=self.page_size,
        )
        return PageSlice(
            view, page.rows, after, page.next_cursor is not None, after is not None, number
        )

    def confidence_now(self, rows: list[MemoryRecord], now: float) -> dict[int, float]:
        """Each row's confidence as a decay run at `now` would set it, under the store's
        policy: one vectorised pass over the page (the stored value may be months old)."""
        if not rows:
            return {}
        values = confidences_now(rows, now, self.store.settings().params())
        return {row.id: float(value) for row, value in zip(rows, values.tolist(), strict=True)}

    def first(self, view: View) -> PageSlice:
        return self.forward(view, None, 1)

    def next(self, current: PageSlice) -> PageSlice:
        if not current.rows or not current.has_next:
            return current
        number = None if current.number is None else current.number + 1
        return self.forward(current.view, cursor_of(current.rows[-1], current.view.sort), number)

    def previous(self, current: PageSlice) -> PageSlice:
        """The page before the current one: read backwards from its first row."""
        if not current.rows or not current.has_previous:
            return current
        number = None if current.number is None else max(1, current.number - 1)
        return self.backward(current.view, cursor_of(current.rows[0], current.view.sort), number)

    def last(self, view: View, number: int | None = None) -> PageSlice:
        return self.backward(view, None, number)

    def backward(self, view: View, before: Cursor | None, number: int | None) -> PageSlice:
        """The page that ends just before `before` (None: the last page).

        The reversed order is exactly the reverse of the forward one (SQLite puts NULLs
        first ascending and last descending), so one query reads the page and the row before
        it, whose cursor becomes the page's `after`.
        """
        page = self.store.page(
            view.memory_filter,
            sort=view.sort,
            descending=not view.descending,
            after=before,
            limit=self.page_size + 1,
        )
        rows = page.rows
        if len(rows) <= self.page_size:
            # At the start of the order: show a full first page rather than a short one.
            return self.forward(view, None, 1)
        after = cursor_of(rows[self.page_size], view.sort)
        in_view = list(reversed(rows[: self.page_size]))
        return PageSlice(view, in_view, after, before is not None, True, number)

    def reload(self, current: PageSlice) -> PageSlice:
        """The same page again (after an action changed rows); falls back to the previous page
        when the current one emptied."""
        fresh = self.forward(current.view, current.after, current.number)
        if not fresh.rows and fresh.has_previous:
            return self.backward(current.view, None, None)
        return fresh

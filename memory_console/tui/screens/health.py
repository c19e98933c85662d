"""The health screen: tiers now and ahead, age, staleness, what never decays, activity, quotas
and candidates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Header, Label, Sparkline, Static
from textual.worker import get_current_worker

from memory_console.maintenance.console_reads import ReadCancelled, cancellable, private_reader
from memory_console.maintenance.forecast import MONTHS
from memory_console.maintenance.health import (
    AGE_BUCKETS,
    AUTO_SCAN,
    DUE_SOON_DAYS,
    MAX_IDS,
    NEVER_DECAY,
    Candidates,
    DueOutlook,
    Finder,
    Target,
    TierProjection,
    created_between_ids,
    daily_accesses,
    due_outlook,
    find_candidates,
    ids_target,
    owner_quota,
    project_tiers,
    recently_accessed_ids,
    stale_ids,
    store_stats,
)
from memory_console.policies import TIER_NAMES
from memory_console.store import MemoryFilter, Store
from memory_console.tui.formatting import when
from memory_console.tui.screens.base import ConsoleScreen
from memory_console.tui.widgets.figure_table import FigureTable
from memory_console.tui.widgets.footer import FittedFooter

ACTIVITY_DAYS = 14
BAR = 16  # cells of the widest bar


@dataclass
class StatsLoaded(Message):
    """store_stats: tiers, staleness, activity, ages (the slow one on a large store)."""

    stats: dict[str, Any]


@dataclass
class CountsLoaded(Message):
    """Active memories per owner and topic, flagged ones, recalls per day."""

    owners: list[tuple[str, int]]
    topics: list[tuple[str, int]]
    flagged: int
    daily: list[int]
    due: DueOutlook


@dataclass
class TiersLoaded(Message):
    projection: TierProjection


@dataclass
class CandidatesLoaded(Message):
    candidates: Candidates


@dataclass
class MemoriesFound(Message):
    """The memories behind a figure that is no plain filter."""

    label: str
    ids: list[int]
    total: int


# An owner's use of the quota: the share right-aligned in room for "9,999%" (a larger one reads
# ">9999%"), a space, and a bar of 5 that is full from 100% on, so a larger share never draws
# a shorter bar.
SHARE_WIDTH = 6
USE_WIDTH = SHARE_WIDTH + 1 + 5


def bar(count: int, largest: int, width: int = BAR) -> Text:
    filled = round(width * count / largest) if largest else 0
    return Text("█" * filled + "·" * (width - filled), style="cyan")


def number(value: int | None) -> Text:
    return Text("…" if value is None else f"{value:,}", justify="right")


class HealthScreen(ConsoleScreen):
    """Every number leads to its memories: Enter shows them in the memory list."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    BINDINGS = [
        Binding(
            "tab",
            "app.focus_next",
            "Next table",
            id="health.next",
            tooltip="Move to the next table of figures",
        ),
        Binding(
            "ctrl+r", "reload", "Reload", id="health.reload", tooltip="Compute every figure again"
        ),
        Binding("escape", "back", "Back", id="health.back", tooltip="Back to where you were"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.scanning = False
        self.stats: StatsLoaded | None = None
        self.counts: CountsLoaded | None = None
        self.projection: TierProjection | None = None
        self.candidates: Candidates | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="health-head")
        with VerticalScroll(id="health-body"):
            with Horizontal(id="health-top"):
                with Vertical(id="health-tiers-box"):
                    yield Label(
                        "tiers by confidence as of now, and if not recalled",
                        classes="section first",
                    )
                    yield FigureTable(
                        [("tier", 8), ("now", 8)] + [(f"+{m} mo", 8) for m in MONTHS],
                        id="health-tiers",
                        cursor_type="cell",
                    )
                with Vertical(id="health-ages-box"):
                    yield Label("age of active memories", classes="section first")
                    yield FigureTable(
                        [("created", 13), ("memories", 8), ("", BAR)], id="health-ages"
                    )
            with Horizontal(id="health-bottom"):
                with Vertical(id="health-attention-box"):
                    yield Label("needs attention", classes="section first")
                    yield FigureTable([("", 30), ("memories", 11)], id="health-attention")
                    yield Static(id="health-activity-text")
                    yield Sparkline([], summary_function=max, id="health-activity")
                with Vertical(id="health-owners-box"):
                    yield Label(
                        f"owners against the quota ({owner_quota():,})", classes="section first"
                    )
                    yield FigureTable(
                        [("owner", 14), ("active", 7), ("", USE_WIDTH)], id="health-owners"
                    )
                with Vertical(id="health-topics-box"):
                    yield Label("topics", classes="section first")
                    yield FigureTable([("topic", 14), ("active", 7)], id="health-topics")
        yield FittedFooter()

    def on_mount(self) -> None:
        self.sub_title = "store health"
        tiers = self.query_one("#health-tiers", FigureTable)
        tiers.focus()
        tiers.move_cursor(column=1)
        self.reload()

    told_stale = False  # the person was told the figures are older than the store

    def reload(self) -> None:
        self.told_stale = False
        now = self.context.now()
        self.stats = self.counts = self.projection = self.candidates = None
        self.scanning = False
        self.show_all()
        self.load_counts(now)
        self.load_stats(now)
        self.load_tiers(now)

    def scan(self) -> None:
        """Find merge candidates and sensitive memories (a plan of both passes)."""
        if not self.scanning:
            self.scanning = True
            self.show_attention()
            self.load_candidates(self.context.now())

    # -- loading --------------------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="stats")
    def load_stats(self, now: float) -> None:
        with private_reader(self.context.store) as store:
            stats = store_stats(store, now)
        if not get_current_worker().is_cancelled:
            self.post_message(StatsLoaded(stats))

    @work(thread=True, exclusive=True, exit_on_error=False, group="counts")
    def load_counts(self, now: float) -> None:
        active = MemoryFilter(status="active")
        with private_reader(self.context.store) as store:
            owners = [(str(o), int(n)) for o, n in store.counts_by("owner", memory_filter=active)]
            topics = [(str(t), int(n)) for t, n in store.counts_by("topic", memory_filter=active)]
            flagged = store.count(MemoryFilter(status="active", decay_policy="pending_deletion"))
            daily = daily_accesses(store, now, ACTIVITY_DAYS)
            outlook = due_outlook(store, now)
        if not get_current_worker().is_cancelled:
            self.post_message(CountsLoaded(owners, topics, flagged, daily, outlook))

    @work(thread=True, exclusive=True, exit_on_error=False, group="tiers")
    def load_tiers(self, now: float) -> None:
        worker = get_current_worker()
        try:
            with (
                private_reader(self.context.store) as store,
                cancellable(store, lambda: worker.is_cancelled),
            ):
                projection = project_tiers(store, now)
        except ReadCancelled:
            return
        if not worker.is_cancelled:
            self.post_message(TiersLoaded(projection))

    @work(thread=True, exclusive=True, exit_on_error=False, group="candidates")
    def load_candidates(self, now: float) -> None:
        worker = get_current_worker()
        try:
            with (
                private_reader(self.context.store) as store,
                cancellable(store, lambda: worker.is_cancelled),
            ):
                candidates = find_candidates(store, now)
        except ReadCancelled:
            return
        if not worker.is_cancelled:
            self.post_message(CandidatesLoaded(candidates))

    @on(StatsLoaded)
    def _stats(self, message: StatsLoaded) -> None:
        self.stats = message
        self.show_all()

    @on(CountsLoaded)
    def _counts(self, message: CountsLoaded) -> None:
        self.counts = message
        if sum(count for _, count in message.owners) <= AUTO_SCAN:
            self.scan()
        self.show_all()

    @on(TiersLoaded)
    def _tiers(self, message: TiersLoaded) -> None:
        self.projection = message.projection
        self.show_all()

    @on(CandidatesLoaded)
    def _candidates(self, message: CandidatesLoaded) -> None:
        self.candidates = message.candidates
        self.scanning = False
        self.show_all()

    # -- showing --------------------------------------------------------------------------

    def show_all(self) -> None:
        self.show_head()
        self.show_tiers()
        self.show_ages()
        self.show_attention()
        self.show_counts()

    def on_resize(self) -> None:
        self.show_head()

    def show_head(self) -> None:
        head = self.query_one("#health-head", Static)
        width = head.size.width or 1_000
        pieces: list[tuple[str, str]] = []  # (text, style), dropped from the optional ones
        consolidated = 0
        if self.stats is not None:
            status = self.stats.stats["counts"]["status"]
            consolidated = status.get("consolidated", 0)
            pieces.append((f"{self.stats.stats['total']:,} memories", "bold"))
            pieces.append((f"{status.get('active', 0):,} active", ""))
            pieces.append((f"{status.get('archived', 0):,} archived", ""))
            pieces.append((f"{consolidated:,} consolidated", ""))
        pieces.append((f"at {when(self.context.now())}", ""))
        hint = ("Enter on a number: its memories", "dim")
        # What does not fit gives way whole, never cut mid-word: first the hint (the footer
        # says it too), then a count of no consolidated memories.
        for candidate in (
            [*pieces, hint],
            pieces,
            [p for p in pieces if consolidated or not p[0].endswith(" consolidated")],
        ):
            text = Text(" ")
            for number, (words, style) in enumerate(candidate):
                text.append(" · " if number else "")
                text.append(words, style=style)
            if text.cell_len <= width:
                break
        head.update(text)

    def show_tiers(self) -> None:
        projection = self.projection
        rows: list[tuple[list[Text | str], dict[int, Target]]] = []
        for tier, name in enumerate(TIER_NAMES):
            cells: list[Text | str] = [name]
            targets: dict[int, Target] = {}
            for column, months in enumerate((0, *MONTHS), start=1):
                if projection is None:
                    cells.append(number(None))
                    continue
                cells.append(number(projection.count(months, tier)))
                targets[column] = projection.target(months, tier)
            rows.append((cells, targets))
        self.query_one("#health-tiers", FigureTable).show_grid(rows)

    def show_ages(self) -> None:
        histogram = self.stats.stats["age_days"]["histogram"] if self.stats else {}
        largest = max(histogram.values(), default=0)
        now = self.context.now()
        rows: list[tuple[list[Text | str], Target | None]] = []
        for name, low, high in AGE_BUCKETS:
            count = histogram.get(name)
            finder = age_finder(now, low, high)
            rows.append(
                (
                    [name, number(count), bar(count or 0, largest)],
                    Target(f"created {name} ago", finder=finder, total=count or 0),
                )
            )
        self.query_one("#health-ages", FigureTable).show_rows(rows)

    def show_attention(self) -> None:
        stats = self.stats.stats if self.stats else None
        now = self.context.now()
        rows: list[tuple[list[Text | str], Target | None]] = []
        if stats is not None:
            stale, recent = stats["stale"], stats["recently_accessed"]
            rows.append(
                (
                    [f"stale: not recalled in {stale['days']} days", number(stale["count"])],
                    Target(
                        f"stale ({stale['days']}+ days)",
                        finder=lambda store: stale_ids(store, now, MAX_IDS),
                        total=stale["count"],
                    ),
                )
            )
            rows.append(
                (
                    [f"recalled in the last {recent['days']} days", number(recent["count"])],
                    Target(
                        f"recalled in {recent['days']} days",
                        finder=lambda store: recently_accessed_ids(store, now, MAX_IDS),
                        total=recent["count"],
                    ),
                )
            )
        else:
            rows += [(["stale", number(None)], None), (["recalled lately", number(None)], None)]
        rows.append(
            (
                ["flagged for deletion", number(self.counts.flagged if self.counts else None)],
                Target(
                    "flagged for deletion",
                    MemoryFilter(status="active", decay_policy="pending_deletion"),
                ),
            )
        )
        rows += self.due_rows()
        projection, candidates = self.projection, self.candidates
        rows.append(
            (
                [
                    "promotion candidates",
                    number(None if projection is None else len(projection.candidates)),
                ],
                ids_target("promotion candidates", projection.candidates)
                if projection is not None
                else None,
            )
        )
        for reason in NEVER_DECAY:
            ids = None if projection is None else projection.never_decay.get(reason)
            label = "never decays: " + reason.replace("decay_policy ", "policy ")
            rows.append(
                (
                    [label, number(None if ids is None else len(ids))],
                    None if ids is None else ids_target(f"never decay ({reason})", ids),
                )
            )
        if candidates is not None:
            groups = f"merge candidates ({candidates.groups:,} groups)"
            rows.append(
                (
                    [groups, number(len(candidates.merge_members))],
                    ids_target("merge candidates", candidates.merge_members),
                )
            )
            rows.append(
                (
                    ["holding secrets or identifiers", number(len(candidates.sensitive))],
                    ids_target("sensitive memories", candidates.sensitive),
                )
            )
        else:
            waiting = (
                number(None)
                if self.scanning or self.counts is None
                else Text("Enter: scan", style="bold", justify="right")
            )
            scan = None if self.scanning else Target("scan", scan=True)
            rows += [
                (["merge candidates", waiting], scan),
                (["holding secrets or identifiers", waiting], scan),
            ]
        self.query_one("#health-attention", FigureTable).show_rows(rows)
        self.show_activity()

    def due_rows(self) -> list[tuple[list[Text | str], Target | None]]:
        """What the next maintenance runs read, by the due index: due now, due within a
        week; while the index is not computed under the store's settings, the next run
        reads every memory, and the rows say so."""
        outlook = self.counts.due if self.counts else None
        if outlook is None:
            return [(["due for maintenance now", number(None)], None)]
        if not outlook.current:
            text = Text("every one", style="dim", justify="right")
            return [(["due for maintenance now", text], None)]
        return [
            (["due for maintenance now", number(outlook.due_now)], outlook.target(soon=False)),
            (
                [f"due within {DUE_SOON_DAYS} days", number(outlook.due_soon)],
                outlook.target(soon=True),
            ),
        ]

    def show_activity(self) -> None:
        daily = self.counts.daily if self.counts else []
        text = Text(f"recalls per day, last {ACTIVITY_DAYS} days", style="bold")
        if self.counts is not None:
            text.append(f": {sum(daily):,} (at most {max(daily, default=0):,} a day)")
        if self.stats is not None:
            mean = self.stats.stats["recently_accessed"]["mean_retrievals"]
            if mean is not None:
                text.append(f"\nmemories recalled lately: {mean:.1f} retrievals each", style="dim")
        self.query_one("#health-activity-text", Static).update(text)
        self.query_one(Sparkline).data = daily

    def show_counts(self) -> None:
        owners = self.counts.owners if self.counts else []
        quota = owner_quota()
        rows: list[tuple[list[Text | str], Target | None]] = []
        for owner, count in owners:
            # One unit down the column: 1,300% beside 6% compares at a glance; 13x does not.
            percent = 100 * count / quota
            share = (f"{percent:,.0f}%" if percent < 9999.5 else ">9999%").rjust(SHARE_WIDTH)
            use = Text(share, style="bold red" if count > quota else "")
            use.append(" ")
            use.append_text(bar(min(count, quota), quota, 5))
            rows.append(
                (
                    [owner, number(count), use],
                    Target(f"owner {owner}", MemoryFilter(owner=owner, status="active")),
                )
            )
        self.query_one("#health-owners", FigureTable).show_rows(rows)
        topics = self.counts.topics if self.counts else []
        self.query_one("#health-topics", FigureTable).show_rows(
            [
                (
                    [topic, number(count)],
                    Target(f"topic {topic}", MemoryFilter(topic=topic, status="active")),
                )
                for topic, count in sorted(topics, key=lambda pair: -pair[1])
            ]
        )

    # -- going to the memories ------------------------------------------------------------

    @on(FigureTable.Chosen)
    def _chosen(self, message: FigureTable.Chosen) -> None:
        target = message.target
        if target.scan:
            self.notify(
                "scanning for merges and secrets: a few minutes on a million memories;"
                " the rest of the console keeps working",
                timeout=6,
            )
            self.scan()
        elif target.memory_filter is not None:
            self.console_app.show_memories(target.memory_filter, target.label)
        elif target.finder is not None:
            self.find(target)

    @work(thread=True, exclusive=True, exit_on_error=False, group="find")
    def find(self, target: Target) -> None:
        assert target.finder is not None
        ids = target.finder(self.context.store)
        if not get_current_worker().is_cancelled:
            self.post_message(MemoriesFound(target.label, ids, max(target.total, len(ids))))

    @on(MemoriesFound)
    def _found(self, message: MemoriesFound) -> None:
        if not message.ids:
            self.notify(f"no memories: {message.label}", severity="warning")
            return
        label = message.label
        if message.total > len(message.ids):
            label += f" (the newest {len(message.ids):,} of {message.total:,})"
        self.console_app.show_memories(MemoryFilter(ids=tuple(message.ids)), label)

    def action_reload(self) -> None:
        self.reload()

    def store_changed(self) -> None:
        # Its figures take seconds on a large store: say so (once) rather than read them
        # again at each change an agent makes.
        if not self.told_stale:
            self.told_stale = True
            self.notify(
                "another process changed the store since these figures were read: "
                "ctrl+r reads them again",
                timeout=6,
            )

    def action_back(self) -> None:
        self.app.pop_screen()


def age_finder(now: float, low: float, high: float) -> Finder:
    def find(store: Store) -> list[int]:
        return created_between_ids(store, now, low, high, MAX_IDS)

    return find

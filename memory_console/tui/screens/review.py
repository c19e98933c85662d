"""The merge review: each proposed group beside the memory it becomes, each proposed supersession
beside what it archives; accept, reject, split."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Header, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from memory_console.literal import literal
from memory_console.maintenance import Plan
from memory_console.maintenance.changes import ChangeSet, NewMemory
from memory_console.maintenance.command import Budget
from memory_console.maintenance.edits import (
    EditedPlan,
    PlanEdits,
    edit_plan,
    merge_groups,
    merge_groups_of,
    unedited,
)
from memory_console.maintenance.merge_command import run_budget
from memory_console.maintenance.merge_review import (
    MergeGroup,
    Part,
    load_group,
    merge_members,
    outcome,
    parts_by_group,
)
from memory_console.maintenance.reasons import Reason, reason_text
from memory_console.maintenance.supersede_review import (
    SupersedePair,
    ask_command,
    load_pair,
    proposal_of,
    supersessions,
)
from memory_console.sensitive import mask_keywords, secret_words
from memory_console.tui.formatting import (
    SELECTED_MARK,
    confidence_text,
    date_or_never,
    masked,
    one_line,
    shown,
)
from memory_console.tui.screens.base import ConsoleScreen
from memory_console.tui.widgets.footer import FittedFooter
from memory_console.tui.widgets.literal_table import LiteralTable

MATRIX_LIMIT = 12  # members shown in the similarity matrix
LABEL_WIDTH = 26  # cells of a group's line in the list
STATE_MARKS = {
    "merge": ("✓", "green"),
    "rejected": ("×", "red"),
    "split": ("÷", "yellow"),
    "": ("±", "yellow"),
}  # "": some members taken out


@dataclass
class GroupLoaded(Message):
    """One group's members and similarities, read from the store."""

    group: MergeGroup


@dataclass
class PairLoaded(Message):
    """One proposed supersession, read from the store (with the merge command's proposal)."""

    pair: SupersedePair


@dataclass
class ReviewEdited(Message):
    plan: Plan
    edited: EditedPlan
    edits: PlanEdits


def merged_view(part: Part, label: str) -> RenderableType:
    fields = part.merged
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    # Merge review has no reveal key: secrets stay masked here, as in the preview.
    title, content = str(fields.get("title", "")), str(fields.get("content", ""))
    keywords = ", ".join(
        mask_keywords([str(k) for k in fields.get("keywords", [])], secret_words(title, content))
    )
    grid.add_row("title", shown(title, reveal=False, style="bold"))
    grid.add_row("content", shown(content, reveal=False))
    grid.add_row("keywords", shown(keywords or "none", reveal=False))
    grid.add_row("confidence", confidence_text(float(fields.get("confidence", 0.0))))
    grid.add_row("importance", f"{float(fields.get('importance', 0.0)):.2f}")
    grid.add_row("retrievals", f"{int(fields.get('retrieval_count', 0)):,}")
    grid.add_row("created", date_or_never(fields.get("created_at")))
    grid.add_row("type", literal(f"{fields.get('memory_type')} · {fields.get('decay_policy')}"))
    grid.add_row("from", ", ".join(f"#{i}" for i in part.members))
    return Group(Text(label, style="bold underline"), grid, Text())


def pair_view(pair: SupersedePair, state: str) -> RenderableType:
    """What accepting the pair does, the differences found and the command's proposal."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    reason = pair.reason
    found = reason.get("differences") if isinstance(reason, Reason) else None
    grid.add_row("archived", shown(f"#{pair.old.id} {pair.old.content}", reveal=False))
    grid.add_row("kept", shown(f"#{pair.new.id} {pair.new.content}", reveal=False))
    grid.add_row("differs", literal(str(found or "a newer value")))
    if pair.cosine is not None:
        grid.add_row("cosine", f"{pair.cosine:.2f}")
    if pair.old.is_protected:
        grid.add_row("note", Text("the older memory is protected", style="yellow"))
    proposal = proposal_of(reason)
    if proposal:
        grid.add_row("proposal", literal(proposal))
    elif isinstance(reason, Reason) and reason.get("merge_command_failure"):
        grid.add_row("proposal", literal(reason_text(reason).rsplit("; ", 1)[-1]))
    head = (
        f"#{pair.new.id} supersedes #{pair.old.id}"
        if state == "supersede"
        else f"{state}: #{pair.old.id} stays active (y supersedes it)"
    )
    return Group(Text(head, style="bold underline"), grid, Text())


def similarity_table(group: MergeGroup) -> Table:
    shown = min(len(group.members), MATRIX_LIMIT)
    title = group.measure
    if shown < len(group.members):
        title += f" (first {shown} of {len(group.members)})"
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        header_style="bold",
        title_style="bold",
        expand=False,
        padding=(0, 0),
    )
    table.add_column("", min_width=2)
    for column in range(shown):
        table.add_column(str(column + 1), justify="right", min_width=4)
    for row in range(shown):
        cells = []
        for column in range(shown):
            value = float(group.similarity[row, column])
            style = "dim" if row == column else ("green" if value >= 0.9 else "")
            number = "1.0" if value >= 0.995 else f"{value:.2f}".removeprefix("0")
            cells.append(Text("·" if row == column else number, style=style))
        table.add_row(Text(str(row + 1), style="bold"), *cells)
    return table


class ReviewScreen(ConsoleScreen):
    """Hands the edits made here to `done` when left (Escape); the preview applies them."""

    BINDINGS = [
        Binding(
            "y",
            "accept",
            "Accept",
            id="review.accept",
            tooltip="Merge this group (or make this supersession) as the plan proposes",
        ),
        Binding(
            "n",
            "reject",
            "Reject",
            id="review.reject",
            tooltip="Do not merge this group (or supersede): its memories stay as they are",
        ),
        Binding(
            "x",
            "take_out",
            "Take out",
            id="review.take_out",
            tooltip="Take this member out of the merge (again: put it back)",
        ),
        Binding("space", "mark", "Mark", id="review.mark", tooltip="Mark this member for a split"),
        Binding(
            "s",
            "split",
            "Split",
            id="review.split",
            tooltip="Split the marked members off into a merge of their own",
        ),
        Binding(
            "g",
            "switch_list",
            "Groups/members",
            id="review.switch_list",
            tooltip="Move between the list of groups and the group's members (as Tab and "
            "Shift+Tab do)",
        ),
        Binding(
            "escape",
            "done",
            "Done",
            id="review.done",
            tooltip="Back to the preview with these decisions",
        ),
    ]

    def __init__(
        self,
        plan: Plan,
        edited: EditedPlan,
        edits: PlanEdits,
        done: Callable[[PlanEdits], None],
        focus: int | None = None,
        scopes: tuple[int, int] | None = None,
    ) -> None:
        """`scopes` (done, of): the plan is still being made and holds the merges found so
        far; grow() brings more, finish() the plan made in the end."""
        super().__init__()
        self.scopes = scopes
        # Groups whose line is worded as proposed until the edits are worked out for them
        # (every group's: the list is filled anew then).
        self.relabel: set[int] = set()
        self.refill = False
        self.done = done
        self.plan = plan
        self.edited = edited
        self.edits = edits
        self.proposed = merge_groups(plan)
        self.parts = parts_by_group(plan, edited, self.proposed)
        # Merge groups by their (negative) keys, then supersessions by the older memory's id.
        self.pairs = supersessions(plan)
        self.keys = sorted(self.proposed, reverse=True) + sorted(self.pairs)
        self.position = {key: number for number, key in enumerate(self.keys)}
        self.memories = {memory.key: memory for memory in plan.new_memories}
        self.focus_id = focus
        self.group: MergeGroup | None = None
        self.pair: SupersedePair | None = None
        self.proposals: dict[int, Reason] = {}  # the merge command's, asked once per pair
        self.budget: Budget | None = None  # the merge command's time in this review
        self.marked: set[int] = set()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="review-head")
        with Horizontal(id="review-body"):
            yield OptionList(id="review-groups")
            with Vertical(id="review-group"):
                yield Static(id="review-group-head")
                yield LiteralTable(id="review-members", cursor_type="row", zebra_stripes=True)
                with Horizontal(id="review-sides"):
                    yield Static(id="review-similarity")
                    with VerticalScroll(id="review-merged-box"):
                        yield Static(id="review-merged")
        yield FittedFooter()

    def on_mount(self) -> None:
        self.sub_title = "merge review"
        members = self.query_one("#review-members", DataTable)
        for key, label, width in (
            ("mark", " ", 1),
            ("n", "#", 2),
            ("id", "id", 6),
            ("title", "title", 40),
            ("confidence", "conf", 4),
            ("retrievals", "ret", 4),
            ("state", "state", 8),
        ):
            members.add_column(label, key=key, width=width)
        groups = self.query_one("#review-groups", OptionList)
        groups.add_options([Option(self.label(key, self.parts), id=str(key)) for key in self.keys])
        start = 0
        if self.focus_id is not None:
            start = next(
                (
                    i
                    for i, k in enumerate(self.keys)
                    if k == self.focus_id
                    or self.focus_id in self.proposed.get(k, ())
                    or (k in self.pairs and self.pairs[k][0] == self.focus_id)
                ),
                0,
            )
        groups.highlighted = start
        members.focus()
        self.show_head()

    def grow(
        self,
        plan: Plan,
        memories: Sequence[NewMemory],
        changes: Sequence[ChangeSet],
        scopes: tuple[int, int],
    ) -> None:
        """More merges found while planning goes on (`plan` holds them all, `memories` and
        `changes` are the new ones): listed after those shown. Only the new ones are worked
        on here, and the edits only when there are some."""
        self.plan, self.scopes = plan, scopes
        added = merge_groups_of(memories, changes)
        self.proposed.update(added)
        self.memories.update((memory.key, memory) for memory in memories)
        new = [key for key in sorted(added, reverse=True) if key not in self.position]
        for key in new:
            self.position[key] = len(self.keys)
            self.keys.append(key)
        self.parts.update((key, self.as_proposed(key)) for key in new)
        if self.edits.is_empty:
            self.edited = unedited(plan, self.proposed)
        else:
            self.relabel.update(new)  # worded as proposed until the edits are in
            self.edit_worker(self.edits)
        groups = self.query_one("#review-groups", OptionList)
        groups.add_options(Option(self.label(key, self.parts), id=str(key)) for key in new)
        if groups.highlighted is None and self.keys:
            groups.highlighted = 0
        self.show_head()

    def finish(self, plan: Plan, edited: EditedPlan | None) -> None:
        """The plan made in the end (`edited` under this review's edits, when known). Its
        groups are those listed, in the order they were found: each line keeps its place
        and words (the plan's keys take the listed ones' places), so 10,000 lines are not
        worded again."""
        shown = self.group.key if self.group is not None else None
        proposed = merge_groups(plan)
        final = {members[0]: key for key, members in proposed.items()}
        listed = [final.get(self.proposed[key][0]) for key in self.keys]
        self.plan, self.scopes = plan, None
        self.memories = {memory.key: memory for memory in plan.new_memories}
        self.pairs = supersessions(plan)
        same = sorted(k for k in listed if k is not None) == sorted(proposed) and not self.pairs
        shown = listed[self.position[shown]] if shown is not None and same else None
        self.proposed = proposed
        self.keys = (
            [k for k in listed if k is not None]
            if same
            else sorted(proposed, reverse=True) + sorted(self.pairs)
        )
        self.position = {key: number for number, key in enumerate(self.keys)}
        self.group = self.pair = None
        if edited is None and self.edits.is_empty:
            edited = unedited(plan, self.proposed)
        if edited is not None:
            self.edited = edited
            self.parts = parts_by_group(plan, edited, self.proposed)
        else:
            self.parts = {key: self.as_proposed(key) for key in self.proposed}
            # Lines kept in place already wear the decisions taken on them; new ones are
            # worded as proposed until the edits are in.
            self.refill = not same
            self.edit_worker(self.edits)
        if same and self.keys:
            self.load(shown if shown is not None else self.keys[0])
        elif not same:
            self.fill(shown or 0)
        self.show_head()

    def as_proposed(self, key: int) -> list[Part]:
        return [Part(key, self.proposed[key], self.memories[key].fields)]

    def fill(self, key: int) -> None:
        """The list of groups and pairs anew, at `key`'s line."""
        groups = self.query_one("#review-groups", OptionList)
        with self.prevent(OptionList.OptionHighlighted):
            groups.clear_options()
            groups.add_options(Option(self.label(k, self.parts), id=str(k)) for k in self.keys)
        if self.keys:
            groups.highlighted = self.position.get(key, 0)

    def label(self, key: int, parts: dict[int, list[Part]]) -> Text:
        return self.group_label(key, parts[key]) if key in self.proposed else self.pair_label(key)

    def pair_label(self, old: int) -> Text:
        state = "rejected" if old in self.edits.apart or old in self.edits.excluded else "merge"
        mark, style = STATE_MARKS[state]
        digits = len(str(len(self.keys)))
        text = Text(f"{self.position[old] + 1:>{digits}} ", style="dim")
        text.append(f"{mark} ", style=style)
        text.append(one_line(f"#{old} → #{self.pairs[old][0]}", LABEL_WIDTH - digits - 3))
        return text

    def group_label(self, key: int, parts: list[Part]) -> Text:
        memory = self.memories[key]
        where = f"{memory.fields.get('owner')}/{memory.fields.get('topic')}"
        state = outcome(parts, len(self.proposed[key]))
        mark, style = STATE_MARKS.get(state, STATE_MARKS["split" if "split" in state else ""])
        digits = len(str(len(self.keys)))
        text = Text(f"{self.position[key] + 1:>{digits}} ", style="dim")
        text.append(f"{mark} ", style=style)
        text.append(f"{len(self.proposed[key]):>2} ", style="bold")
        text.append(one_line(where, LABEL_WIDTH - digits - 6))
        return text

    def show_head(self) -> None:
        parts = self.parts
        states = [outcome(parts[k], len(self.proposed[k])) for k in self.proposed]
        rejected = sum(s == "rejected" for s in states)
        changed = sum(s not in ("merge", "rejected") for s in states)
        text = Text(f" {len(self.proposed):,} merge groups", style="bold")
        text.append(
            f" · {len(self.proposed) - rejected - changed:,} as proposed · "
            f"{changed:,} changed · {rejected:,} rejected · "
            f"{len(self.edited.plan.new_memories):,} new memories"
        )
        if self.pairs:
            kept = supersessions(self.edited.plan)
            text.append(f" · {len(self.pairs):,} supersessions", style="bold")
            text.append(f" · {len(kept):,} accepted · {len(self.pairs) - len(kept):,} rejected")
        if self.scopes is not None:
            done, total = self.scopes
            text = Text.assemble((f" planning: {done:,} of {total:,} scopes ·", "yellow"), text)
        self.query_one("#review-head", Static).update(text, layout=False)  # one line

    # -- one group ------------------------------------------------------------------------

    @on(OptionList.OptionHighlighted, "#review-groups")
    def _group_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_index < len(self.keys):
            self.marked.clear()
            self.load(self.keys[event.option_index])  # ids go stale when a plan is made

    @on(OptionList.OptionSelected, "#review-groups")
    def _group_selected(self) -> None:
        self.query_one("#review-members", DataTable).focus()

    def load(self, key: int) -> None:
        if key in self.pairs:
            self.pair_worker(key)
        else:
            self.load_worker(key, self.edited)

    @work(thread=True, exclusive=True, exit_on_error=False, group="group")
    def pair_worker(self, old: int) -> None:
        """The pair, and the merge command's proposal when one is configured (asked once)."""
        pair = load_pair(self.context.store, self.plan, old)
        command = self.context.settings.merge_command
        reason = pair.reason
        if command and isinstance(reason, Reason) and not proposal_of(reason):
            if old not in self.proposals:
                self.budget = self.budget or run_budget(self.context.settings)
                values = ask_command(command, pair.old, pair.new, reason, self.budget)
                self.proposals[old] = reason.with_values(**values)
            pair = SupersedePair(pair.old, pair.new, pair.number, pair.cosine, self.proposals[old])
        if not get_current_worker().is_cancelled:
            self.post_message(PairLoaded(pair))

    @on(PairLoaded)
    def _pair_loaded(self, message: PairLoaded) -> None:
        self.group = None
        self.pair = pair = message.pair
        state = pair.state(self.edits)
        head = Text(f"supersession {pair.number:,} of {len(self.pairs):,}: ", style="bold")
        head.append(literal(reason_text(pair.reason)))
        head.append(f" · {state}", style="bold")
        self.query_one("#review-group-head", Static).update(head)
        members = self.query_one("#review-members", DataTable)
        members.clear()
        for number, (record, role) in enumerate(((pair.old, state), (pair.new, "kept")), 1):
            style = "dim strike" if role == "supersede" else ""
            members.add_row(
                "",
                str(number),
                str(record.id),
                one_line(masked(record.title, reveal=False), 60, style=style),
                f"{record.confidence:.2f}",
                str(record.retrieval_count),
                "archived" if role == "supersede" else role,
                key=str(record.id),
            )
        cosine = "-" if pair.cosine is None else f"{pair.cosine:.2f}"
        self.query_one("#review-similarity", Static).update(Text(f"cosine {cosine}"))
        self.query_one("#review-merged", Static).update(pair_view(pair, state))
        groups = self.query_one("#review-groups", OptionList)
        groups.replace_option_prompt_at_index(
            self.position[pair.old.id], self.pair_label(pair.old.id)
        )

    # Descriptions of their own: Textual words a worker's arguments otherwise, and a plan's
    # words run to megabytes.
    @work(thread=True, exclusive=True, exit_on_error=False, group="group", description="group")
    def load_worker(self, key: int, edited: EditedPlan) -> None:
        group = load_group(self.context.store, self.plan, edited, key)
        if not get_current_worker().is_cancelled:
            self.post_message(GroupLoaded(group))

    @on(GroupLoaded)
    def _group_loaded(self, message: GroupLoaded) -> None:
        same = self.group is not None and self.group.key == message.group.key
        self.pair = None
        self.group = group = message.group
        number = self.position[group.key] + 1  # as listed
        head = Text(f"group {number:,} of {len(self.proposed):,}: ", style="bold")
        head.append(literal(reason_text(group.reason)))
        head.append(f" · {group.summary}", style="bold")
        self.query_one("#review-group-head", Static).update(head)
        members = self.query_one("#review-members", DataTable)
        row = members.cursor_row if same else 0
        members.clear()
        for number, record in enumerate(group.members, start=1):
            state = group.state(record.id, self.edits)
            style = "dim strike" if state in ("apart", "excluded") else ""
            members.add_row(
                Text(SELECTED_MARK if record.id in self.marked else "", style="bold"),
                str(number),
                str(record.id),
                one_line(masked(record.title, reveal=False), 60, style=style),
                f"{record.confidence:.2f}",
                str(record.retrieval_count),
                state,
                key=str(record.id),
            )
        if group.members:
            members.move_cursor(row=min(row, len(group.members) - 1), animate=False)
        self.query_one("#review-similarity", Static).update(similarity_table(group))
        merged: list[RenderableType] = []
        for position, part in enumerate(group.parts):
            name = f"merge {chr(65 + position)}" if len(group.parts) > 1 else "the new memory"
            merged.append(merged_view(part, f"{name}: {len(part.members)} memories become one"))
        if not merged:
            merged.append(
                Text("rejected: these memories stay as they are (y merges them)", style="bold")
            )
        self.query_one("#review-merged", Static).update(Group(*merged))
        groups = self.query_one("#review-groups", OptionList)
        groups.replace_option_prompt_at_index(
            self.position[group.key], self.group_label(group.key, group.parts)
        )

    # -- decisions ------------------------------------------------------------------------

    def member_ids(self) -> list[int]:
        return [r.id for r in self.group.members] if self.group is not None else []

    def current_member(self) -> int | None:
        members = self.query_one("#review-members", DataTable)
        ids = self.member_ids()
        return ids[members.cursor_row] if ids and 0 <= members.cursor_row < len(ids) else None

    def decide(self, edits: PlanEdits, note: str) -> None:
        self.edits = edits
        self.marked.clear()
        self.notify(note, timeout=2)
        self.edit_worker(edits)

    @work(thread=True, exclusive=True, exit_on_error=False, group="edit", description="edit")
    def edit_worker(self, edits: PlanEdits) -> None:
        plan = self.plan
        edited = edit_plan(plan, edits, lambda ids: merge_members(self.context.store, ids))
        if not get_current_worker().is_cancelled:
            self.post_message(ReviewEdited(plan, edited, edits))

    @on(ReviewEdited)
    def _edited(self, message: ReviewEdited) -> None:
        if message.edits == self.edits and message.plan is self.plan:
            self.edited = message.edited
            self.parts = parts_by_group(self.plan, self.edited, self.proposed)
            if self.refill:
                self.refill = False
                self.relabel.clear()
                self.fill(self.group.key if self.group is not None else 0)
            elif self.relabel:
                groups = self.query_one("#review-groups", OptionList)
                for key in sorted(self.relabel & self.proposed.keys()):
                    groups.replace_option_prompt_at_index(
                        self.position[key], self.label(key, self.parts)
                    )
                self.relabel.clear()
            self.show_head()
            if self.group is not None:
                self.load(self.group.key)
            elif self.pair is not None:
                self.load(self.pair.old.id)

    def action_switch_list(self) -> None:
        groups = self.query_one("#review-groups", OptionList)
        if groups.has_focus:
            self.query_one("#review-members", DataTable).focus()
        else:
            groups.focus()

    def action_accept(self) -> None:
        if self.pair is not None:
            self.decide(self.edits.accept([self.pair.old.id]), "superseded as proposed")
        elif self.group is not None:
            self.decide(self.edits.accept(self.member_ids()), "merged as proposed")

    def action_reject(self) -> None:
        if self.pair is not None:
            self.decide(self.edits.reject([self.pair.old.id]), "not superseded")
        elif self.group is not None:
            self.decide(self.edits.reject(self.member_ids()), "not merged")

    def action_take_out(self) -> None:
        if self.pair is not None:
            old = self.pair.old.id
            if old in self.edits.apart:
                self.action_accept()
            else:
                self.action_reject()
            return
        ident = self.current_member()
        if ident is None:
            return
        if ident in self.edits.apart:
            self.decide(self.edits.accept([ident]), f"#{ident} back in the merge")
        else:
            self.decide(self.edits.reject([ident]), f"#{ident} taken out of the merge")

    def action_mark(self) -> None:
        ident = self.current_member()
        if ident is None:
            return
        self.marked.symmetric_difference_update({ident})
        members = self.query_one("#review-members", DataTable)
        members.update_cell(
            str(ident), "mark", Text(SELECTED_MARK if ident in self.marked else "", style="bold")
        )
        if members.cursor_row < members.row_count - 1:
            members.action_cursor_down()

    def action_split(self) -> None:
        if self.pair is not None:
            self.notify("a supersession is accepted or rejected, not split", severity="warning")
            return
        if not self.marked:
            self.notify("mark the members to split off first (space)", severity="warning")
            return
        if len(self.marked) < 2:
            self.notify("a merge needs two memories: mark at least two", severity="warning")
            return
        marked = sorted(self.marked)
        self.decide(self.edits.split(marked), f"{len(marked)} members split off")

    def action_done(self) -> None:
        self.app.pop_screen()
        self.done(self.edits)

"""The topics tree: memories per owner, namespace and topic, with counts; selecting one filters
the table."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text, TextType
from textual import on
from textual.message import Message
from textual.widgets import Tree
from textual.widgets._tree import TOGGLE_STYLE
from textual.widgets.tree import TreeNode

from memory_console.literal import literal
from memory_console.store import PlaceCount

# (owner, namespace, topic); None means "any", a namespace "" "in none"
Place = tuple[str | None, str | None, str | None]
EXPAND_UP_TO = 6  # owners expanded at first; more than that start folded
ICON_WIDTH = 2  # "▶ " before a label that folds


def label(name: str, count: int, width: int | None = None, *, italic: bool = False) -> Text:
    """`name 1,234`; given a width, the name gives way (an ellipsis) so that the count is
    always shown whole: a cut count reads as a different number. A namespace's name is
    italic (a topic's is not)."""
    number = f" {count:,}"
    text = literal(name)
    if italic:
        text.stylize("italic")
    if width is not None and text.cell_len + len(number) > width:
        text.truncate(max(1, width - len(number)), overflow="ellipsis")
    text.append(number, style="dim")
    return text


def same_place(one: Place, other: Place) -> bool:
    """Whether two places choose the same memories' node: a topic of an owner with no
    namespace is the same node whether its namespace reads "any" or "in none"."""
    return one == other or (
        one[0] == other[0] and one[2] == other[2] and {one[1], other[1]} == {None, ""}
    )


class TopicsTree(Tree[Place]):
    """All memories, then each owner, then each owner's namespaces (a LangGraph agent's,
    holding their topics) and the topics of its memories in none."""

    @dataclass
    class Chosen(Message):
        """A node was chosen: filter the table to this owner, namespace and topic (None:
        any; a namespace "": in none)."""

        tree: TopicsTree
        owner: str | None
        namespace_path: str | None  # (Message has a `namespace` of its own)
        topic: str | None

    def __init__(self, *, id: str | None = None) -> None:
        self.counted: dict[int, tuple[str, int]] = {}  # node id -> (name, count)
        self.namespaces: set[int] = set()  # the ids of namespaces' nodes (italic names)
        super().__init__("all memories", data=(None, None, None), id=id)
        self.show_root = True
        self.guide_depth = 2
        self.loaded = False

    def render_label(self, node: TreeNode[Place], base_style: Style, style: Style) -> Text:
        """A counted node's label fitted to the tree's width: the name gives way first."""
        counted = self.counted.get(node.id)
        if counted is None or not self.size.width:
            return super().render_label(node, base_style, style)
        depth, parent = 0, node.parent
        while parent is not None:
            depth, parent = depth + 1, parent.parent
        room = self.scrollable_content_region.width - depth * self.guide_depth - ICON_WIDTH
        fitted = label(*counted, width=max(4, room), italic=node.id in self.namespaces)
        fitted.stylize(style)
        icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
        prefix = (icon, base_style + TOGGLE_STYLE) if node.allow_expand else ("", base_style)
        return Text.assemble(prefix, fitted)

    def process_label(self, label: TextType) -> Text:
        """A str label is an owner's or a topic's name: stored text, shown literally."""
        return super().process_label(literal(label) if isinstance(label, str) else label)

    def show_counts(self, counts: list[PlaceCount], place: Place) -> None:
        """Rebuild the tree from (owner, namespace, topic, count) rows, keeping the chosen
        place."""
        by_owner: dict[str, list[PlaceCount]] = defaultdict(list)
        for row in counts:
            by_owner[row.owner].append(row)
        # Owners and namespaces the person opened stay open when the counts come again.
        opened = {node.data for node in self._inner_nodes() if node.is_expanded}
        # A person moving in the tree keeps the node they are on when the counts come again.
        moving = self.has_focus and self.cursor_node is not None
        at = self.cursor_node.data if moving and self.cursor_node is not None else place
        first_time = not self.loaded
        self.clear()
        total = sum(row.count for row in counts)
        self.counted = {self.root.id: ("all memories", total)}
        self.namespaces = set()
        self.root.set_label(label("all memories", total))
        self.root.data = (None, None, None)
        chosen: TreeNode[Place] = self.root
        for owner, rows in sorted(by_owner.items()):
            here: Place = (owner, None, None)
            unfold = first_time and len(by_owner) <= EXPAND_UP_TO
            expand = here in opened or owner == place[0] or unfold
            node = self.counted_node(self.root, owner, sum(r.count for r in rows), here, expand)
            if at is not None and same_place(at, here):
                chosen = node
            namespaces = sorted({r.namespace for r in rows if r.namespace is not None})
            for namespace in namespaces:
                inside = [r for r in rows if r.namespace == namespace]
                spot: Place = (owner, namespace, None)
                shown = spot in opened or place[:2] == spot[:2] or unfold
                branch = self.counted_node(
                    node, namespace, sum(r.count for r in inside), spot, shown, italic=True
                )
                if at is not None and same_place(at, spot):
                    chosen = branch
                for row in inside:
                    leaf = self.counted_leaf(branch, row, (owner, namespace, row.topic))
                    if at is not None and same_place(at, (owner, namespace, row.topic)):
                        chosen = leaf
            # The topics of memories in no namespace: "in none" only where the owner has some
            # in one (elsewhere "any" is the same set, and keeps the counts on their index).
            none = "" if namespaces else None
            for row in rows:
                if row.namespace is None:
                    leaf = self.counted_leaf(node, row, (owner, none, row.topic))
                    if at is not None and same_place(at, (owner, none, row.topic)):
                        chosen = leaf
        self.root.expand()
        self.loaded = True
        self.call_after_refresh(self.move_cursor, chosen)

    def counted_node(
        self,
        parent: TreeNode[Place],
        name: str,
        count: int,
        data: Place,
        expand: bool,
        *,
        italic: bool = False,
    ) -> TreeNode[Place]:
        node = parent.add(label(name, count, italic=italic), data=data, expand=expand)
        self.counted[node.id] = (name, count)
        if italic:
            self.namespaces.add(node.id)
        return node

    def counted_leaf(
        self, parent: TreeNode[Place], row: PlaceCount, data: Place
    ) -> TreeNode[Place]:
        leaf = parent.add_leaf(label(row.topic, row.count), data=data)
        self.counted[leaf.id] = (row.topic, row.count)
        return leaf

    def _inner_nodes(self) -> Iterator[TreeNode[Place]]:
        for owner in self.root.children:
            yield owner
            yield from (child for child in owner.children if child.allow_expand)

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected[Place]) -> None:
        event.stop()
        owner, namespace, topic = event.node.data or (None, None, None)
        self.post_message(self.Chosen(self, owner, namespace, topic))

"""The topics tree: memories per owner and topic, with counts; selecting one filters the table."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text, TextType
from textual import on
from textual.message import Message
from textual.widgets import Tree
from textual.widgets._tree import TOGGLE_STYLE
from textual.widgets.tree import TreeNode

from memory_console.literal import literal

# (owner, topic); None means "any"
Place = tuple[str | None, str | None]
EXPAND_UP_TO = 6  # owners expanded at first; more than that start folded
ICON_WIDTH = 2  # "▶ " before a label that folds


def label(name: str, count: int, width: int | None = None) -> Text:
    """`name 1,234`; given a width, the name gives way (an ellipsis) so that the count is
    always shown whole: a cut count reads as a different number."""
    number = f" {count:,}"
    text = literal(name)
    if width is not None and text.cell_len + len(number) > width:
        text.truncate(max(1, width - len(number)), overflow="ellipsis")
    text.append(number, style="dim")
    return text


class TopicsTree(Tree[Place]):
    """All memories, then each owner, then each owner's topics."""

    @dataclass
    class Chosen(Message):
        """A node was chosen: filter the table to this owner and topic (None: any)."""

        tree: TopicsTree
        owner: str | None
        topic: str | None

    def __init__(self, *, id: str | None = None) -> None:
        self.counted: dict[int, tuple[str, int]] = {}  # node id -> (name, count)
        super().__init__("all memories", data=(None, None), id=id)
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
        fitted = label(*counted, width=max(4, room))
        fitted.stylize(style)
        icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
        prefix = (icon, base_style + TOGGLE_STYLE) if node.allow_expand else ("", base_style)
        return Text.assemble(prefix, fitted)

    def process_label(self, label: TextType) -> Text:
        """A str label is an owner's or a topic's name: stored text, shown literally."""
        return super().process_label(literal(label) if isinstance(label, str) else label)

    def show_counts(self, counts: list[tuple[str, str, int]], place: Place) -> None:
        """Rebuild the tree from (owner, topic, count) rows, keeping the chosen place."""
        by_owner: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for owner, topic, count in counts:
            by_owner[owner].append((topic, count))
        # Owners the person opened stay open when the counts come again (after an action).
        opened = {node.data[0] for node in self.root.children if node.is_expanded and node.data}
        # A person moving in the tree keeps the node they are on when the counts come again.
        moving = self.has_focus and self.cursor_node is not None
        at = self.cursor_node.data if moving and self.cursor_node is not None else place
        first_time = not self.loaded
        self.clear()
        self.counted = {self.root.id: ("all memories", sum(count for _, _, count in counts))}
        total = sum(count for _, _, count in counts)
        self.root.set_label(label("all memories", total))
        self.root.data = (None, None)
        chosen: TreeNode[Place] = self.root
        for owner, topics in sorted(by_owner.items()):
            expand = (
                owner in opened
                or owner == place[0]
                or (first_time and len(by_owner) <= EXPAND_UP_TO)
            )
            node = self.root.add(
                label(owner, sum(c for _, c in topics)), data=(owner, None), expand=expand
            )
            self.counted[node.id] = (owner, sum(c for _, c in topics))
            if at == (owner, None):
                chosen = node
            for topic, count in topics:
                leaf = node.add_leaf(label(topic, count), data=(owner, topic))
                self.counted[leaf.id] = (topic, count)
                if at == (owner, topic):
                    chosen = leaf
        self.root.expand()
        self.loaded = True
        self.call_after_refresh(self.move_cursor, chosen)

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected[Place]) -> None:
        event.stop()
        owner, topic = event.node.data or (None, None)
        self.post_message(self.Chosen(self, owner, topic))

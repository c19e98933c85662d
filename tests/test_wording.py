"""Words that agree with their numbers: one memory, one other, nothing left to archive."""

from __future__ import annotations

import pytest

from memory_console.commands.maintenance_commands import print_undo
from memory_console.maintenance.reasons import merged_member_text
from memory_console.maintenance.undo import UndoReport
from memory_console.tui.screens.forget import protected_choice


def test_a_merged_member_names_one_other_in_the_singular() -> None:
    grouped = {"measure": "cosine", "threshold": 0.92}
    assert "with 1 other (" in merged_member_text({"others": 1, **grouped})
    assert "with 2 others (" in merged_member_text({"others": 2, **grouped})


def test_undo_counts_one_memory_in_the_singular(capsys: pytest.CaptureFixture[str]) -> None:
    print_undo(UndoReport(run_id=3, at=0.0, restored=[7]))
    assert capsys.readouterr().out.startswith("undid run 3: restored 1 memory\n")


def test_skipping_every_protected_memory_archives_nothing() -> None:
    every = protected_choice("archive", [4, 5], {4: "a", 5: "b"})
    assert "archives nothing" in str(every.body) and "other 0" not in str(every.body)
    some = protected_choice("archive", [4, 5, 6], {4: "a"})
    assert "archives the other 2 memories" in str(some.body)


def test_the_help_legend_names_the_words_the_table_shows() -> None:
    """The legend's top tier says "stated" only for what a person said and names "v.high",
    which the table shows for a memory nobody stated."""
    from memory_console.tui.formatting import SHORT_LABELS
    from memory_console.tui.screens.help import confidence_rows

    legend = " ".join(words for _, words in confidence_rows())
    for short in SHORT_LABELS.values():
        assert short in legend, short
    top = confidence_rows()[0][1]
    assert "if a person said it" in top and "v.high" in top

"""A plan as a file: written by a dry run, edited by plan-edit, applied exactly, undone; the
same edits through the console give the same applied result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed

from memory_console.cli import main
from memory_console.maintenance import list_runs, plan
from memory_console.maintenance.console_reads import run_changes as changes_of_run
from memory_console.maintenance.edits import merge_groups
from memory_console.settings import Settings
from memory_console.store import MemoryFilter, Store
from memory_console.timeutil import to_iso
from memory_console.tui.app import make_app
from memory_console.tui.plan_request import PlanRequest
from memory_console.tui.screens.confirm import ConfirmScreen
from memory_console.tui.screens.preview import PreviewScreen
from memory_console.tui.screens.review import ReviewScreen
from memory_console.tui.screens.runs import RunsScreen
from tests.helpers import NOW, add_duplicate_groups

SIZE = (120, 36)


@pytest.fixture(scope="module")
def demo_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo store with merge groups of several sizes, built once; tests use copies."""
    from memory_console.demo import build_demo

    path = tmp_path_factory.mktemp("plan-file") / "demo.db"
    build_demo(path, count=300, seed=7, now=NOW)
    with Store(path) as store:
        add_duplicate_groups(store, (3, 4, 3))
    return path


def copy_of(base: Path, where: Path, name: str) -> Path:
    path = where / name
    shutil.copy(base, path)
    return path


def cli(*args: str) -> int:
    return main(list(args))


def memories(path: Path) -> list[dict[str, Any]]:
    """Every memory's fields, in id order."""
    with Store(path, read_only=True, create=False) as store:
        ids = store.ids_matching(MemoryFilter()).tolist()
        records = store.get_many(ids)
        return [records[i].as_dict() for i in sorted(ids)]


def as_before(rows: list[dict[str, Any]], before: list[dict[str, Any]]) -> bool:
    """The memories `before` held are back as they were (undo counts a revision more)."""
    old = [{k: v for k, v in m.items() if k != "revision"} for m in before]
    last = before[-1]["id"]
    return [{k: v for k, v in m.items() if k != "revision"} for m in rows if m["id"] <= last] == old


def run_changes(path: Path) -> list[Any]:
    """What the last run wrote: its events (without the clock's `at` and own ids) and row."""
    with Store(path, read_only=True, create=False) as store:
        run = list_runs(store)[0]
        events = [
            (e.memory_id, e.actor, e.kind, e.before, e.after, e.query)
            for e in changes_of_run(store, run.id, 0, 100_000)
        ]
        return [*events, (run.passes, run.counts, run.changed, run.now)]


def chosen_edits(path: Path) -> tuple[int, list[int], list[int], int, list[int]]:
    """From the plan the store proposes: a member left out of a group of at least three (so
    that group is merged anew), the group of three rejected, two members of the group of
    four split off. Groups are numbered as the review shows them."""
    with Store(path, read_only=True, create=False) as store:
        groups = merge_groups(plan(store, ("consolidate",), now=NOW))
    keys = sorted(groups, reverse=True)
    sizes = [len(groups[k]) for k in keys]
    rejected = sizes.index(3)
    split = sizes.index(4)
    regrouped = next(i for i, size in enumerate(sizes) if size >= 3 and i not in (rejected, split))
    left_out = groups[keys[regrouped]][0]
    return (
        left_out,
        groups[keys[rejected]],
        groups[keys[split]][:2],
        split + 1,
        [rejected + 1, regrouped + 1],
    )


async def settle(pilot: Pilot[Any]) -> None:
    """Until every worker (also those a newer one cancelled) is done and heard from."""
    app = pilot.app
    for _ in range(40):
        await pilot.pause()
        try:
            await app.workers.wait_for_complete()
        except (WorkerFailed, WorkerCancelled):
            continue
        await pilot.pause()
        if not any(worker.is_running for worker in app.workers):
            return


def test_dry_run_edit_apply_undo_through_the_cli(
    demo_base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = copy_of(demo_base, tmp_path, "cli.db")
    before = memories(db)
    left_out, rejected, split, split_number, (rejected_number, _) = chosen_edits(db)
    plan_path = tmp_path / "plan.json"
    common = ["--db", str(db), "--now", to_iso(NOW)]
    assert (
        cli("maintain", "--passes", "consolidate", "--dry-run", "--out", str(plan_path), *common)
        == 0
    )
    assert memories(db) == before  # a dry run writes nothing but the file
    data = json.loads(plan_path.read_text())
    assert (data["format"], data["version"], data["store"]) == (
        "memory-console-plan",
        1,
        str(db.resolve()),
    )
    merge = data["new_memories"][0]["reason"]
    assert merge["code"] == "merge_group" and merge["measure"] in ("cosine", "same text")
    capsys.readouterr()

    edited = tmp_path / "edited.json"
    assert (
        cli(
            "plan-edit",
            str(plan_path),
            "--leave-out",
            str(left_out),
            "--reject-group",
            str(rejected_number),
            "--split-group",
            f"{split_number}:{split[0]},{split[1]}",
            "--out",
            str(edited),
            "--json",
            "--db",
            str(db),
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    outcomes = {g["number"]: g["outcome"] for g in summary["groups"]}
    assert outcomes[rejected_number] == "rejected" and outcomes[split_number] == "split in 2"
    assert summary["left_out"] == [left_out]

    assert cli("maintain", "--apply", str(edited), "--db", str(db), "--json") == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    with Store(db) as store:
        assert all(store.require(i).status == "active" for i in rejected + [left_out])
        into = {store.require(i).consolidated_into for i in split}
        assert len(into) == 1 and None not in into
        merged = store.require(into.pop() or 0)
        assert sorted(merged.metadata["consolidated_from"]) == sorted(split)

    # The same file again: the store moved on, so it is refused as stale.
    assert cli("maintain", "--apply", str(edited), "--db", str(db)) == 1
    assert "--skip-stale" in capsys.readouterr().err
    assert cli("undo", str(run_id), "--db", str(db)) == 0
    assert as_before(memories(db), before)


def test_the_cli_and_the_console_apply_the_same_edits_alike(
    demo_base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli_db = copy_of(demo_base, tmp_path, "cli.db")
    tui_db = copy_of(demo_base, tmp_path, "tui.db")
    before = memories(cli_db)
    left_out, rejected, split, split_number, (rejected_number, _) = chosen_edits(cli_db)

    plan_path = tmp_path / "plan.json"
    args = ["--passes", "consolidate", "--now", to_iso(NOW), "--db", str(cli_db)]
    assert cli("maintain", "--dry-run", "--out", str(plan_path), *args) == 0
    edit = ["--leave-out", str(left_out), "--reject-group", str(rejected_number)]
    edit += ["--split-group", f"{split_number}:{split[0]},{split[1]}"]
    assert cli("plan-edit", str(plan_path), *edit) == 0
    capsys.readouterr()
    assert cli("maintain", "--apply", str(plan_path), "--db", str(cli_db), "--json") == 0
    cli_run = json.loads(capsys.readouterr().out)["run_id"]

    import asyncio

    asyncio.run(console_edits(tui_db, left_out, rejected, split))

    assert memories(cli_db) == memories(tui_db)
    assert run_changes(cli_db) == run_changes(tui_db)

    assert cli("undo", str(cli_run), "--db", str(cli_db)) == 0
    asyncio.run(console_undo(tui_db))
    assert memories(cli_db) == memories(tui_db)
    assert as_before(memories(cli_db), before)


async def console_edits(db: Path, left_out: int, rejected: list[int], split: list[int]) -> None:
    """Preview, leave one memory out, review: reject a group and split another, apply."""
    with Store(db, actor="tui") as store:
        app = make_app(Settings(db=db, page_size=30), store, now=NOW, semantic=False)
        app.typing.window = 0.0  # a pilot's keys come faster than typing
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            app.push_screen(PreviewScreen(PlanRequest(("consolidate",), "relevance", {}, NOW, NOW)))
            await settle(pilot)
            preview = app.screen
            assert isinstance(preview, PreviewScreen) and preview.base is not None
            await pilot.press("slash", *str(left_out), "enter")
            await settle(pilot)
            assert preview.table.current is not None and preview.table.current.id == left_out
            await pilot.press("x")
            await settle(pilot)
            assert preview.edits.excluded == {left_out}

            await pilot.press("c")
            await settle(pilot)
            review = app.screen
            assert isinstance(review, ReviewScreen)
            options: Any = review.query_one("#review-groups")
            options.highlighted = next(
                i for i, k in enumerate(review.keys) if review.proposed[k] == rejected
            )
            await settle(pilot)
            await pilot.press("n")
            await settle(pilot)
            options.highlighted = next(
                i for i, k in enumerate(review.keys) if review.proposed[k][:2] == split
            )
            await settle(pilot)
            assert review.group is not None and [r.id for r in review.group.members][:2] == split
            await pilot.press("space", "space", "s")
            await settle(pilot)
            assert review.group.summary == "split in 2"
            await pilot.press("escape")
            await settle(pilot)

            await pilot.press("A")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("enter")
            await settle(pilot)
            assert list_runs(store)


async def console_undo(db: Path) -> None:
    """The runs screen undoes the last run."""
    with Store(db, actor="tui") as store:
        app = make_app(Settings(db=db, page_size=30), store, now=NOW, semantic=False)
        app.typing.window = 0.0  # a pilot's keys come faster than typing
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("R")
            await settle(pilot)
            assert isinstance(app.screen, RunsScreen)
            await pilot.press("u")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("enter")
            await settle(pilot)
            assert list_runs(store)[0].undone


def test_a_plan_file_is_refused_when_malformed_of_another_version_or_store(
    demo_base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = copy_of(demo_base, tmp_path, "a.db")
    other = copy_of(demo_base, tmp_path, "b.db")
    plan_path = tmp_path / "plan.json"
    assert cli("maintain", "--dry-run", "--out", str(plan_path), "--db", str(db)) == 0
    capsys.readouterr()
    data = json.loads(plan_path.read_text())

    def refused(text: str, *extra: str, target: Path = db) -> str:
        path = tmp_path / "bad.json"
        path.write_text(text)
        assert cli("maintain", "--apply", str(path), "--db", str(target), *extra) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1  # one line
        return err

    assert "invalid JSON" in refused("{")
    assert "not a memory-console plan" in refused(json.dumps({"version": 1}))
    assert "version 2" in refused(json.dumps({**data, "version": 2}))
    assert "is missing or malformed" in refused(json.dumps({**data, "touched": []}))
    assert "made for" in refused(plan_path.read_text(), target=other)
    assert "the plan file fixes them" in refused(plan_path.read_text(), "--passes", "decay")
    # `maintain --apply` with no file plans and applies, as it always did.
    assert cli("maintain", "--apply", "--db", str(db), "--now", to_iso(NOW)) == 0


def test_plan_edit_names_only_the_groups_it_changed(
    demo_base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plan may hold hundreds of merges: the summary lists the edited groups and counts the
    rest (--json lists every group)."""
    db = copy_of(demo_base, tmp_path, "summary.db")
    plan_path = tmp_path / "plan.json"
    common = ["--db", str(db), "--now", to_iso(NOW)]
    assert (
        cli("maintain", "--passes", "consolidate", "--dry-run", "--out", str(plan_path), *common)
        == 0
    )
    groups = len(json.loads(plan_path.read_text())["new_memories"])
    assert groups >= 2
    capsys.readouterr()
    assert cli("plan-edit", str(plan_path), "--reject-group", "2", "--db", str(db)) == 0
    lines = capsys.readouterr().out.splitlines()
    named = [line.strip() for line in lines if line.strip().startswith("group ")]
    assert len(named) == 1 and named[0].startswith("group 2 (") and named[0].endswith(": rejected")
    assert f"{groups - 1:,} other merge groups as proposed (--json lists them)" in lines[2]

"""Subcommands of the store's settings: config (show), config set KEY VALUE, config history."""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from rich.table import Table

from memory_console.commands import common
from memory_console.commands.common import UserError
from memory_console.maintenance.registry import parameter_classes
from memory_console.store import Store
from memory_console.store.settings import SettingChange, all_specs
from memory_console.timeutil import to_iso


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = subparsers.add_parser(
        "config",
        description="The settings the store keeps for every process that opens it: whether "
        "decay runs, the decay policy and its parameters, the intervals of maintain --due, "
        "the memory banks' lifespans and the thresholds. A flag given to one command overrides "
        "them for that run; a key never set takes its built-in default.",
        epilog=common.examples("config", "config set interval.decay 12h"),
    )
    common.add_common(config)
    actions = config.add_subparsers(dest="config_action", metavar="ACTION")
    config.set_defaults(handler=cmd_show)

    change = actions.add_parser(
        "set",
        help="change one setting (recorded with who and when)",
        description="Set KEY to VALUE (durations as 30m, 6h, 7d; `default` returns the key "
        "to its built-in default). Each change is recorded: see `config history`.",
        epilog=common.examples(
            "config set decay_policy periodic", "config set interval.decay default"
        ),
    )
    common.add_common(change)
    change.add_argument("key", metavar="KEY", help="the setting (`config` lists every key)")
    change.add_argument("value", metavar="VALUE", help="its new value, or default")
    change.add_argument("--by", default=None, help="who makes the change (default: the user)")
    change.set_defaults(handler=cmd_set)

    history = actions.add_parser(
        "history",
        help="changes of the settings, newest first",
        description="Who changed which setting, when, from what to what.",
        epilog=common.examples("config history", "config history --limit 5 --json"),
    )
    common.add_common(history)
    common.add_limit(history, 50, "changes")
    history.set_defaults(handler=cmd_history)


def setting_rows(store: Store) -> list[dict[str, Any]]:
    """Every known setting: key, value, shown value, source (store or default) and help."""

    return [
        {
            "key": spec.key,
            "value": value,
            "shown": spec.show(value),
            "source": source,
            "help": spec.help,
        }
        for spec, value, source in store.settings().rows(parameter_classes())
    ]


def cmd_show(args: argparse.Namespace) -> int:
    store = common.open_store(args)
    try:
        rows = setting_rows(store)
    finally:
        store.close()
    if args.json:
        common.print_json(
            {row["key"]: {"value": row["value"], "source": row["source"]} for row in rows}
        )
        return 0

    table = Table(show_edge=False, header_style="bold")
    for column in ("key", "value", "from", "meaning"):
        table.add_column(column, overflow="fold")
    for row in rows:
        style = "bold" if row["source"] == "store" else None
        table.add_row(row["key"], row["shown"], row["source"], row["help"], style=style)
    common.console().print(table)
    return 0


def actor_of(args: argparse.Namespace) -> str:
    if args.by:
        return str(args.by)
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


def cmd_set(args: argparse.Namespace) -> int:

    store = common.open_store(args, write=f"config set {args.key}")
    try:
        store.require_writable(f"config set {args.key}")
        value = None if args.value.strip().lower() == "default" else args.value
        try:
            change = store.set_setting(
                args.key,
                value,
                actor_of(args),
                parameter_sets=parameter_classes(),
                now=common.now_of(args),
            )
        except ValueError as error:
            raise UserError(str(error)) from error
    finally:
        store.close()
    if args.json:
        common.print_json(change_json(change))
    else:
        print(f"{change_text(change)} (by {change.actor} at {to_iso(change.at)})")
    return 0


def change_text(change: SettingChange) -> str:
    """`interval.decay: default -> 12h` (values as `config` shows them)."""

    spec = all_specs(parameter_classes())[change.key]
    before = "default" if change.before is None else spec.show(change.before)
    after = "default" if change.after is None else spec.show(change.after)
    return f"{change.key}: {before} -> {after}"


def change_json(change: SettingChange) -> dict[str, Any]:
    return {
        "key": change.key,
        "before": change.before,
        "after": change.after,
        "at": to_iso(change.at),
        "by": change.actor,
    }


def cmd_history(args: argparse.Namespace) -> int:
    common.check_range("--limit", args.limit, 1)
    store = common.open_store(args)
    try:
        changes = store.setting_history(args.limit)
    finally:
        store.close()
    if args.json:
        common.print_json([change_json(change) for change in changes])
        return 0
    if not changes:
        print("no setting changed yet: every setting has its default")
    for change in changes:
        print(f"{to_iso(change.at)}  {change.actor}  {change_text(change)}")
    return 0

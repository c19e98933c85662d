"""Long-lived child processes for the several-processes test: the console driven by a pilot,
and an agent using MemoryAPI, each taking one JSON command per line on stdin and answering
one JSON line (this module holds no tests).

Run as `python -m tests.procs_children console|agent STORE`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from memory_console.settings import Settings
from memory_console.store import Store

if TYPE_CHECKING:
    from memory_console.api import MemoryAPI

SIZE = (120, 36)


def view(store: Store) -> dict[str, list[int]]:
    """What this process sees of the store: every memory's id, and the protected ones."""
    rows = store._query("SELECT id, is_protected FROM memory ORDER BY id")
    return {"ids": [r[0] for r in rows], "protected": [r[0] for r in rows if r[1]]}


def replier() -> TextIO:
    """The real stdout for answers; anything else printed goes to stderr."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    sys.stdout = sys.stderr
    return out


async def settle(pilot: Any) -> None:
    from tests.helpers import settle as settle_workers  # the console child alone needs it

    await settle_workers(pilot)


async def run_console(path: str) -> None:
    from memory_console.tui.app import make_app
    from memory_console.tui.screens.health import HealthScreen
    from memory_console.tui.screens.main import MainScreen
    from memory_console.tui.screens.preview import PreviewScreen

    out = replier()
    store = Store(path, actor="tui")
    app = make_app(Settings(db=store.path, page_size=30), store, semantic=False)
    app.typing.window = 0.0  # a pilot's keys come faster than typing
    loop = asyncio.get_running_loop()

    async def back_to_main(pilot: Any) -> None:
        for _ in range(5):
            if isinstance(app.screen, MainScreen):
                return
            await pilot.press("escape")
            await settle(pilot)
        raise AssertionError(f"stuck on {type(app.screen).__name__}")

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        out.write(json.dumps({"ready": os.getpid()}) + "\n")
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            command = json.loads(line)
            op = command["op"]
            answer: dict[str, Any] = {}
            if op == "health":
                await pilot.press("H")
                await settle(pilot)
                answer["screen"] = type(app.screen).__name__
                assert isinstance(app.screen, HealthScreen), answer
                await back_to_main(pilot)
            elif op == "preview":
                await pilot.press("m")
                await settle(pilot)
                await pilot.press("ctrl+r")
                await settle(pilot)
                screen = app.screen
                assert isinstance(screen, PreviewScreen), type(screen).__name__
                answer["planned"] = screen.base is not None
                await back_to_main(pilot)
            elif op in ("protect", "unprotect"):
                main = app.screen
                assert isinstance(main, MainScreen)
                main.view = main.view.with_filter(ids=(command["id"],))
                main.reset_view()
                await settle(pilot)
                await pilot.press("p" if op == "protect" else "P")
                await settle(pilot)
            elif op == "quit":
                break
            answer["view"] = view(store)
            out.write(json.dumps(answer) + "\n")
    store.close()
    out.write(json.dumps({"closed": True}) + "\n")


def using(api: MemoryAPI | None, path: str) -> contextlib.AbstractContextManager[MemoryAPI]:
    """The agent's open API, or one opened for this request alone (an agent between runs)."""
    from memory_console.api import MemoryAPI

    if api is not None:
        return contextlib.nullcontext(api)
    return MemoryAPI(path, owner="agent", semantic=False)


def run_agent(path: str) -> None:
    from memory_console.api import MemoryAPI

    out = replier()
    api: MemoryAPI | None = None  # an agent between runs until it is told to open
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        answer: dict[str, Any] = {}
        if op == "open" and api is None:
            api = MemoryAPI(path, owner="agent", semantic=False)
        elif op == "close" and api is not None:
            api.close()
            api = None
        elif op == "remember":
            with using(api, path) as used:
                result = used.remember(command["text"], user_requested=True)
                answer["id"] = result.id
                answer["action"] = result.action
                answer["view"] = view(used.store)
        elif op == "recall":
            with using(api, path) as used:
                answer["hits"] = len(used.recall(command["query"]))
                answer["view"] = view(used.store)
        elif op == "quit":
            break
        if "view" not in answer:
            if api is not None:
                answer["view"] = view(api.store)
            else:
                with Store(path, read_only=True, create=False) as reader:
                    answer["view"] = view(reader)
        answer["open"] = api is not None
        out.write(json.dumps(answer) + "\n")
    if api is not None:
        api.close()
    out.write(json.dumps({"closed": True}) + "\n")


if __name__ == "__main__":
    role, store_path = sys.argv[1], sys.argv[2]
    if role == "console":
        asyncio.run(run_console(store_path))
    else:
        run_agent(store_path)

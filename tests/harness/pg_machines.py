"""State machines run on PostgreSQL: each example on a new database copied from the test
server's template (pgvector in it), dropped after."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

NAMES = itertools.count(1)


class OnPostgreSQL:
    """Put before a state machine class whose examples open `new_store()` and end with
    `drop_store()`: its stores become databases of the server `run_on_postgresql` names."""

    server: tuple[str, str] | None = None  # (server URL, template database)
    tag = "machine"  # in each database's name
    database = ""

    def new_store(self) -> str | Path:
        import psycopg

        assert self.server is not None
        url, template = self.server
        self.database = f"{template}_{self.tag}_{next(NAMES)}"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {self.database} TEMPLATE {template}")
        return database_url(url, self.database)

    def drop_store(self) -> None:
        import psycopg

        assert self.server is not None
        with psycopg.connect(self.server[0], autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")


def database_url(server_url: str, name: str) -> str:
    """The server's URL naming another database on it (the query, e.g. a socket, is kept)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def run_on_postgresql(machine: Any, server: tuple[str, str], examples: int, steps: int) -> None:
    """Run `machine` (a state machine class with OnPostgreSQL first among its bases)."""
    machine.server = server
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=examples,
                stateful_step_count=steps,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            ),
        )
    finally:
        machine.server = None

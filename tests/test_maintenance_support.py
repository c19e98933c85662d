"""Shared helpers of the maintenance tests: building stores fast and reading them back."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memory_console.store import Store
from memory_console.store.validate import INSERT_COLUMNS

NOW = 1_795_000_000.0
DAY = 86400.0
ISO_NOW = "2026-11-18T11:06:40Z"  # NOW in ISO 8601
SNAPSHOT_COLUMNS = (
    "id, owner, topic, tier, memory_type, title, content, keywords, source, importance, "
    "confidence, base_confidence, retrieval_count, created_at, updated_at, last_accessed_at, "
    "decay_policy, is_protected, status, consolidated_into, metadata, external_id"
)


def memory(content: str, *, days_old: float, **fields: Any) -> dict[str, Any]:
    """A memory created `days_old` days before NOW (episodic unless told)."""
    fields.setdefault("memory_type", "episodic")
    return {"content": content, "created_at": NOW - days_old * DAY, **fields}


def snapshot(path: Path) -> dict[int, tuple[Any, ...]]:
    """Every memory's fields except revision, by id."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(f"SELECT {SNAPSHOT_COLUMNS} FROM memory ORDER BY id").fetchall()
    return {row[0]: row for row in rows}


def synthetic_rows(count: int, seed: int = 1) -> Iterator[tuple[Any, ...]]:
    """Memory rows (INSERT_COLUMNS order) that all decay at NOW: 40 to 400 days old, never
    accessed, episodic or procedural, standard policy, spread over five owners."""
    rng = random.Random(seed)
    for i in range(count):
        created = NOW - rng.uniform(40, 400) * DAY
        yield (
            f"owner{i % 5}",
            "general",
            "long_term",
            rng.choice(("episodic", "procedural")),
            f"memory {i}",
            f"memory {i} about a project",
            "[]",
            "manual",
            rng.random(),
            1.0,
            1.0,
            rng.randrange(12),
            created,
            created,
            None,
            "standard",
            0,
            "active",
            None,
            "{}",
            None,
        )


def build_synthetic_store(path: Path, count: int, seed: int = 1) -> Path:
    """A store of `count` synthetic memories, loaded as the demo builder does: indexes and
    the text index filled once after inserting, then the trigger put back."""
    with Store(path, actor="test") as store, store.transaction("building") as conn:
        indexes = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memory' "
            "AND sql IS NOT NULL"
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        (trigger,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'memory_fts_ai'"
        ).fetchone()
        conn.execute("DROP TRIGGER memory_fts_ai")
        marks = ", ".join("?" * len(INSERT_COLUMNS))
        conn.executemany(
            f"INSERT INTO memory ({', '.join(INSERT_COLUMNS)}, revision) VALUES ({marks}, 0)",
            synthetic_rows(count, seed),
        )
        conn.execute(
            "INSERT INTO memory_fts (rowid, title, content, keywords) "
            "SELECT id, title, content, keywords FROM memory"
        )
        conn.execute(trigger)
        for _, sql in indexes:
            conn.execute(sql)
    return path

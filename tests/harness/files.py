"""A store's files on disk, and what of some tokens each holds (the erasure proof)."""

from __future__ import annotations

from pathlib import Path


def store_files(db_path: Path) -> list[Path]:
    """Every file the project keeps for the store at `db_path` that exists: the database, its
    -wal and -shm, the vector index file (and any temporary one), and the migration backups
    beside it."""
    named = [db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm"), Path(f"{db_path}-vectors")]
    building = sorted(db_path.parent.glob(f"{db_path.name}-vectors.*.tmp"))
    backups = sorted(db_path.parent.glob(f"{db_path.name}.schema*.bak*"))
    return [path for path in [*named, *building, *backups] if path.is_file()]


def scan_store_files(db_path: Path, tokens: list[str]) -> dict[str, dict[str, int]]:
    """Raw bytes of every store file, searched case-insensitively: file name -> token ->
    occurrences, for the files and tokens found (empty: no trace). Run it while this process
    holds no connection to the store: reading a held file would drop this process's locks."""
    from memory_console.store import held

    assert not held.holds(db_path), "close the store before scanning its files"
    found: dict[str, dict[str, int]] = {}
    for path in store_files(db_path):
        data = path.read_bytes().lower()
        hits = {token: data.count(token.lower().encode()) for token in tokens}
        hits = {token: number for token, number in hits.items() if number}
        if hits:
            found[path.name] = hits
    return found

"""Helpers shared by the tests (this module holds no tests): one fixed moment, store builders,
the in-process CLI, the console factory, settling a pilot and labelled texts for the secret scan."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed

from memory_console.cli import main
from memory_console.sensitive import (
    MAX_MASK_ROUNDS,
    WORD,
    Finding,
    mask_keywords,
    masked_spans,
    scan_credentials,
)
from memory_console.settings import Settings
from memory_console.store import Store
from memory_console.store.validate import INSERT_COLUMNS
from memory_console.tui.app import MemoryConsoleApp, make_app
from memory_console.tui.screens.main import MainScreen

# -- one fixed moment -------------------------------------------------------------------------

NOW = 1_795_000_000.0  # the fixed `now` of the tests and snapshots
ISO_NOW = "2026-11-18T11:06:40Z"  # NOW in ISO 8601, for --now
DAY = 86400.0

# -- stores built from rows -------------------------------------------------------------------

SNAPSHOT_COLUMNS = (
    "id, owner, topic, tier, memory_type, title, content, keywords, source, importance, "
    "confidence, base_confidence, retrieval_count, created_at, updated_at, last_accessed_at, "
    "decay_policy, is_protected, status, consolidated_into, metadata, external_id"
)


def memory(content: str, *, days_old: float, **fields: Any) -> dict[str, Any]:
    """A memory created `days_old` days before NOW (episodic unless told)."""
    fields.setdefault("memory_type", "episodic")
    return {"content": content, "created_at": NOW - days_old * DAY, **fields}


DUPLICATE_TEXTS = (
    "Prefers green tea in the afternoon.",
    "Keeps the release checklist in the team wiki.",
    "Likes the aisle seat on short flights.",
    "Writes commit messages in the imperative mood.",
)


def add_duplicate_groups(store: Store, sizes: tuple[int, ...] = (3, 4, 3)) -> list[list[int]]:
    """Groups of exact duplicates (one text said again, as consolidation merges without
    vectors), one group per size, each of its own text; returns their ids."""
    groups = []
    for size, text in zip(sizes, DUPLICATE_TEXTS, strict=False):
        row = {"owner": "alice", "topic": "general", "content": text, "keywords": ["duplicate"]}
        groups.append(store.add_many([dict(row) for _ in range(size)], now=NOW - 40 * DAY))
    return groups


PAIRS = Path(__file__).parent / "data" / "consolidation_pairs.jsonl"


def consolidation_pairs() -> list[dict[str, Any]]:
    """The labelled pairs: should two memories merge (the same fact said again) or not."""
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]


def add_pairs(store: Store, pairs: list[dict[str, Any]]) -> None:
    """Each pair as two memories of an owner of its own (`pair-0007`), so pairs never meet;
    b is told `days_apart` days after a."""
    rows = []
    for number, pair in enumerate(pairs):
        told = NOW - 40 * DAY
        for text, at in ((pair["a"], told - pair.get("days_apart", 0) * DAY), (pair["b"], told)):
            rows.append(
                {
                    "owner": f"pair-{number:04d}",
                    "topic": "general",
                    "memory_type": pair.get("memory_type", "semantic"),
                    "content": text,
                    "keywords": [],
                    "created_at": at,
                }
            )
    store.add_many(rows, now=NOW)


def merged_pairs(store: Store, min_cosine: float | None = None) -> set[int]:
    """The numbers of the pairs the consolidate pass merges at NOW."""
    from memory_console.maintenance import build_params, plan

    overrides = {} if min_cosine is None else {"min_cosine": min_cosine}
    params = build_params(["consolidate"], overrides=overrides, settings=store.settings())
    proposed = plan(store, ["consolidate"], params, now=NOW)
    return {int(m.fields["owner"].removeprefix("pair-")) for m in proposed.new_memories}


def precision_recall(pairs: list[dict[str, Any]], merged: set[int]) -> tuple[float, float]:
    """Precision and recall of "should merge" (1.0 where nothing was merged or expected)."""
    wanted = {n for n, pair in enumerate(pairs) if pair["merge"]}
    right = len(wanted & merged)
    return (right / len(merged) if merged else 1.0, right / len(wanted) if wanted else 1.0)


def snapshot(path: Path | str) -> dict[int, tuple[Any, ...]]:
    """Every memory's fields except revision, by id (of an SQLite file, or a PostgreSQL
    store's URL, read from the server)."""
    sql = f"SELECT {SNAPSHOT_COLUMNS} FROM memory ORDER BY id"
    if str(path).startswith("postgresql://"):
        return {row[0]: row for row in server_rows(str(path), sql)}
    with sqlite3.connect(path) as conn:
        rows = conn.execute(sql).fetchall()
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


def count(path: Path) -> int:
    """How many memories the store at `path` holds."""
    with Store(path, read_only=True) as store:
        return store.count()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows_digest(db: str | Path) -> str:
    """One hash of every row of every table of the store (as `copy` verifies a copy), on
    either backend: equal before and after means nothing was written."""
    from memory_console.store.copy import TABLES, Digest

    digest = Digest()

    def read(conn: Any) -> None:
        for table in TABLES:
            digest.read(conn, table)

    with Store(db, read_only=True) as store, store.snapshot():
        store.read(read)
    return digest.total()


def database_url(server_url: str, name: str) -> str:
    """The server's URL naming another database on it (the query, e.g. a socket, is kept)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def server_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows read from a PostgreSQL store straight from the server, past the Store: a test's
    proof that its data is in the database and not in a file named like the URL."""
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def copy_to_postgres(source: Path, url: str) -> None:
    """The SQLite store at `source` into the new PostgreSQL database at `url`, as `memory-console
    copy` moves it (ids kept, sequences past them, verified): how the PostgreSQL console tests
    get the demo store the SQLite ones open (its text index and vector column are the
    server's)."""
    from memory_console.store.copy import copy_from

    with Store(source, read_only=True) as store:
        copy_from(store, url)


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


def db_rows(db: Path | str, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[Any]:
    """Rows of one statement (`?` parameters) read past the Store: from an SQLite file, or
    from the server a PostgreSQL store's URL names."""
    if str(db).startswith("postgresql://"):
        import psycopg

        from memory_console.store.postgres import placeholders

        with psycopg.connect(str(db)) as conn:
            return conn.execute(placeholders(sql), list(params) or None).fetchall()
    with sqlite3.connect(db) as conn:
        rows = conn.execute(sql, params).fetchall()
    conn.close()
    return rows


def scan_pg_files(
    url: str, tokens: list[str], tables: tuple[str, ...]
) -> dict[str, dict[str, int]]:
    """The raw bytes of the files PostgreSQL keeps `tables` in (heap, TOAST, every index, all
    forks and segments), searched case-insensitively after a CHECKPOINT: file -> token ->
    occurrences, for the files and tokens found (empty: no trace). Needs a superuser on this
    machine's server (the tests' own): it reads the server's data directory."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        folder = Path(conn.execute("SHOW data_directory").fetchone()[0])
        rows = conn.execute(
            "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class AS c "
            "WHERE c.oid = ANY(%(t)s::regclass[]) "
            "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = ANY(%(t)s::regclass[])) "
            "OR c.oid IN (SELECT reltoastrelid FROM pg_class WHERE oid = ANY(%(t)s::regclass[])) "
            "OR c.oid IN (SELECT i.indexrelid FROM pg_index AS i JOIN pg_class AS t "
            "ON t.reltoastrelid = i.indrelid WHERE t.oid = ANY(%(t)s::regclass[]))",
            {"t": list(tables)},
        ).fetchall()
    assert {name for name, _ in rows} >= set(tables)
    found: dict[str, dict[str, int]] = {}
    for name, relative in rows:
        base = folder / relative
        for path in sorted(base.parent.glob(base.name + "*")):
            if path.name != base.name and path.name[len(base.name)] not in "._":
                continue  # another relation whose number begins with this one's
            data = path.read_bytes().lower()
            hits = {token: data.count(token.lower().encode()) for token in tokens}
            hits = {token: number for token, number in hits.items() if number}
            if hits:
                found[f"{name} ({path.name})"] = hits
    return found


def terminal_output(leader: int) -> bytes:
    """What a pseudo-terminal's program wrote since the last read; b"" once it has closed
    (the child gone: reading its leader then fails or returns nothing)."""
    try:
        return os.read(leader, 65536)
    except OSError:
        return b""


# -- the CLI in-process -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int
    out: str
    err: str


def invoke(argv: list[str]) -> Outcome:
    """main() in-process, with strict UTF-8 streams like a real terminal's: its exit code
    (returned, or from SystemExit), stdout and stderr. Any other exception is a crash and
    propagates to the test."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    texts = []
    for stream in (out, err):
        stream.flush()
        buffer = stream.buffer
        assert isinstance(buffer, io.BytesIO)
        texts.append(buffer.getvalue().decode("utf-8"))
    return Outcome(code, texts[0], texts[1])


# A long job's plain progress line (commands/common.py plain_progress): said only once the job
# has run two seconds, so whether one precedes an error depends on the machine's pace.
PROGRESS_LINE = re.compile(r"memory-console: .+: (?:[\d,]+ of [\d,]+ \()?\d+%\)?")


def one_error_line(result: Outcome) -> str:
    """The single error line a failed command printed on stderr (after progress lines, if the
    job ran long enough to say any: nothing else)."""
    assert result.code == 1, result
    lines = [line for line in result.err.splitlines() if not PROGRESS_LINE.fullmatch(line)]
    assert len(lines) == 1 and lines[0].startswith("memory-console: error: "), result.err
    return lines[0]


# -- a full disk ------------------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at folder (skipped where mounting is refused)."""
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a small tmpfs here ({done.stderr.strip()}); "
            "the simulated SQLITE_FULL test covers the store"
        )
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(path: Path) -> None:
    """Write zeros into `path` until the disk is full."""
    with path.open("wb", buffering=0) as handle:
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 65536)
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 512)
    assert shutil.disk_usage(path.parent).free < 4096


# -- the console ------------------------------------------------------------------------------

DEMO_COUNT = 300  # the console tests' demo store (built once, see conftest.demo_file)
DEMO_SEED = 7
PAGE_SIZE = 30  # enough rows to fill the test terminals, and cheap to redraw
# A console test of the screen's own behaviour (themes, the palette, a form's checks, progress
# shown while planning), which reads nothing the backends answer differently: it runs on SQLite
# only, and the suite's time goes to the tests whose reads and writes differ.
SCREEN_ONLY = pytest.mark.parametrize("backend", ["sqlite"])


def where(store: Store) -> str:
    """What --db names for this store: its file, or its URL."""
    return store.url if store.url is not None else str(store.path)


def console(store: Store, **settings: Any) -> MemoryConsoleApp:
    """The app as the CLI builds it, at the fixed `now`, without the background embedder."""
    settings.setdefault("page_size", PAGE_SIZE)
    return make_app(Settings(db=where(store), **settings), store, now=NOW, semantic=False)


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until every worker has finished and its messages have been handled; a worker
    that failed or that a newer one of its group cancelled counts as finished (the screens
    turn failures into notifications, which tests check)."""
    app = pilot.app
    for _ in range(20):
        await pilot.pause()
        try:
            await app.workers.wait_for_complete()
        except (WorkerFailed, WorkerCancelled):
            pass
        await pilot.pause()
        if not any(worker.is_running for worker in app.workers):
            return


def notes(app: MemoryConsoleApp) -> list[str]:
    """Record every notification the app shows (the person's only feedback)."""
    seen: list[str] = []
    original = app.notify

    def notify(message: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(message))
        return original(message, *args, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    return seen


async def open_on(app: MemoryConsoleApp, pilot: Pilot[Any], ids: list[int]) -> MainScreen:
    """Narrow the main screen's table to these memories (through the filter it uses)."""
    screen = app.screen
    assert isinstance(screen, MainScreen)
    screen.view = screen.view.with_filter(ids=tuple(ids))
    screen.reset_view()
    await settle(pilot)
    return screen


# -- masking as it was before the hint and the memo (the reference new masking must equal) -------


def reference_find(text: str) -> list[Finding]:
    """find_sensitive(text, health=False) with every pattern run on every text."""
    return sorted(scan_credentials(text), key=lambda f: f.start)


def reference_mask(text: str) -> str:
    spans = reference_find(text)
    for _ in range(MAX_MASK_ROUNDS):
        if not spans:
            return text
        text = masked_spans(text, spans)
        spans = reference_find(text)
    return text


def reference_mask_value(value: Any) -> Any:
    if isinstance(value, str):
        return reference_mask(value)
    if isinstance(value, dict):
        return {reference_mask(str(k)): reference_mask_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [reference_mask_value(item) for item in value]
    return value


def reference_mask_record(data: dict[str, Any]) -> dict[str, Any]:
    words: set[str] = set()
    for text in (str(data.get("title") or ""), str(data.get("content") or "")):
        for finding in reference_find(text):
            words.update(WORD.findall(text[finding.start : finding.end].lower()))
    masked = reference_mask_value(data)
    if isinstance(masked.get("keywords"), list):
        masked["keywords"] = mask_keywords(masked["keywords"], words)
    return masked


# -- labelled texts for the secret scan -------------------------------------------------------

# Secrets given in a sentence, with words between the name and the value...
PROSE_SECRET_TEXTS = [
    "My password for the office Wi-Fi is Tr0ub4dor&3",
    "My passphrase for the backup disk is correct horse battery staple.",
    "The passphrase of my wallet is purple monkey dishwasher lamp",
    "my password for the VPN is Vpn!2026x",
    "The password to my laptop is hunter2!",
    'The password for the guest network is "blue heron 42"',
    "the password on the old router was admin#77",
    "Her password for the payroll portal is Pa55word!",
    "The password I use for the bank is Xk9#pq!",
    "The password we use for the shared drive is Team-Drive-88",
    "passphrase of my wallet: purple monkey dishwasher seven",
    "The passphrase for the backup disk is 'correct battery staple 9'",
    "password for the NAS admin account: nas-Adm1n",
    "His password at work is now Spring2025!",
    "the PIN for my card is 4821",
    "My PIN for the debit card is 0392",
    "The PIN code for the SIM is 7731",
    "pin for the phone is 2580",
    "Her bank PIN is 9917.",
    "The PIN number of my credit card is 5512",
    "My PIN is still 4407",
    "the code to the gate is 1234",
    "The gate code is 4821.",
    "The door code for the office is 5590#",
    "alarm code: 8080",
    "The access code for the lab is X7F2-9K",
    "the entry code to the building is 2468",
    "The code for the front door is 3141",
    "The keypad code at the storage unit is 90210",
    "The code to the safe is 44721",
    "The security code on my card is 842",
    "The garage code is now 1357",
    "The code for our Wi-Fi router is 7712409",
    "passcode for the phone: 130795",
    "The locker code at the gym is 4506",
    "The Wi-Fi password at the cabin is Lake_House_2024",
    "The PIN for my card is 4821 and my name is Ann.",
    "The code to the gate is 1234 and the alarm code is 8080.",
]
# ...and sentences that look like them but give none (policies, reviews, years, times,
# versions, amounts, where a secret is kept).
PROSE_CLEAN_TEXTS = [
    "The password policy is strict.",
    "The passphrase for the disk is stored in my password manager.",
    "My passphrase for the vault is too long to type on a phone.",
    "The passphrase is correct now.",
    "The code review is at 3.",
    "My PIN pad is broken.",
    "The gate code changed last week.",
    "Reset your password in settings.",
    "The password for the VPN is easy to guess.",
    "The password for the wifi is on the fridge.",
    "The password for the VPN is the same as before.",
    "The password for my account is stored in 1Password.",
    "The password for the router is written on the back.",
    "The password to the test server is expired.",
    "The code for the release is 3.11.7.",
    "The code for the release is due in 2026.",
    "The code freeze for the release is 2026-05-01.",
    "The code for the migration is 1200 lines long.",
    "The PIN for the map is at the top left.",
    "Pin the tab for the dashboard at 1280 pixels.",
    "The gate code is four digits long.",
    "The door code changes every month.",
    "The alarm code was reset by the landlord in 2023.",
    "The code to the gate is on the sticky note.",
    "The security code review is scheduled for 10:30.",
    "Access code generation runs at 09:00 every day.",
    "The password reset for the VPN is at 14:00.",
    "Password manager for the team is Bitwarden.",
    "The passphrase for the wallet is kept offline.",
    "The PIN for my card is 4 digits.",
    "Our door code policy is on the wiki.",
    "The code for the door sensor is in the repo.",
    "The code to the safe is known only to Maria.",
    "The code of conduct for the meetup is 2 pages.",
    "The entry code for the contest is due on 2026-06-01.",
    "The password for the staging database is in the vault.",
    "The code for the front end is 40% tests.",
    "The PIN for the card is 1/3 of the way down the letter.",
    "Password length for the VPN is 12 characters.",
    "The access code for the lab is required at night.",
    "The code on the gate was repainted in 1999.",
    "The pin for the LED is GPIO17.",
    "Pin 13 is the onboard LED.",
    "The code for the lock screen is 2048 bytes.",
    "The entry code for the page is 120 lines of JavaScript.",
]

# Labelled texts for the sensitive scan: each of these holds a credential or an identifier...
SECRET_TEXTS = [
    "My password = hunter2 for the home router",
    "wifi passwd: correct-horse-battery",
    "The pwd is Tr0ub4dor&3",
    "Database password is s3cr3t!42",
    "passphrase: purple monkey dishwasher",
    "api_key = a8f5f167f44f4964e6c998dee827110c",
    "Her API key is sk-live-1234567890abcdefghij",
    "OpenAI key sk-proj-abcdefghijklmnop1234",
    "secret key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "access token = ya29.a0AfH6SMBx3example",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0",
    "use bearer abcdef1234567890XYZ for the staging API",
    "AWS access key AKIAIOSFODNN7EXAMPLE is in the notes",
    "GitHub token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "Slack token xoxb-123456789012-abcdefghij",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA",
    "-----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "-----BEGIN EC PRIVATE KEY----- MHcCAQEEIIGl",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx2example user@laptop",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7example deploy@ci",
    "Card number 4111 1111 1111 1111 expires 12/28",
    "pays with 5500-0000-0000-0004",
    "Visa 4012888888881881 on file",
    "SSN 123-45-6789",
    "social security number is 078-05-1120",
    "client_secret: 8d9f7a6b5c4d3e2f1a0b",
    "auth token = 0123456789abcdef0123",
    "The router admin password: admin12345",
    "GITHUB pwd = ghp-style-value-99",
    "Stripe secret sk_test_4eC39HqLyjWDarjtT1zdp7dc is for staging",
    "token for CI: ghs_abcdefghijklmnopqrstuvwxyz012345",
    "ssh-dss AAAAB3NzaC1kc3MAAACBAexample old-box",
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYexample",
    "vpn password=Winter2026!",
    "keep the access_token: 1/fFAGRNJru1FTz70BzhT3Zg",
    "Amex 3782 822463 10005 is not 16 digits but this one is: 6011 1111 1111 1117",
    "SSN: 219-09-9999 (from the insurance form)",
    "apikey: 9b2c4d6e8f0a1b3c5d7e",
    "Bearer: 7f8e9d0c1b2a3f4e5d6c7b8a",
    "The staging pwd = correct horse battery staple",
    "Server root password is toor1234",
    "-----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo (cut short)",
    "Mastercard 5555 5555 5555 4444, expiry 03/29",
    # real keys in the places agent files and READMEs put placeholders
    "apiKey: sk-ant-api03-x7Yq2LmN9pQr4StUv8WzA1bC",
    "export OPENAI_API_KEY=sk-proj-Zq81LmXw20PdKe7RtYh3",
    "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4",
    "password: xk92!mqZ",
    "Password=Gh7kLm2q (the Letta API key is kept elsewhere)",
    *PROSE_SECRET_TEXTS,
]
# ...and none of these does (near misses included).
CLEAN_TEXTS = [
    "Prefers dark mode in the editor (Solarized Dark).",
    "Weekly sync with Bob every Tuesday at 10:00.",
    "Is building an iron farm in the Minecraft survival world.",
    "Colleague Maria's email is maria.lopez@example.com.",
    "Decided to use PostgreSQL for the billing service.",
    "Forgot the password again and had to reset it.",
    "Wants password managers recommended, prefers Bitwarden.",
    "Asked how API keys should be rotated in general.",
    "Likes tokens of appreciation such as handwritten notes.",
    "Order number 1234 arrived on 2026-05-01.",
    "Phone extension 4411, desk 12.",
    "Flight LH 1234 departs at 07:45 from gate 22.",
    "The invoice total was 1,234.56 EUR.",
    "Ran 10 km in 52 minutes on Sunday.",
    "Zip code 10115 in Berlin.",
    "Version 3.11.7 of Python is installed.",
    "The ticket is JIRA-4521.",
    "Uses SSH to reach the build box.",
    "Generated an ed25519 key pair last week (public part only on GitHub).",
    "Bearer bonds are a plot point in the novel they are reading.",
    "Meeting room 123-45 on the second floor.",
    "Born in 1990 and moved to Lisbon in 2019.",
    "Keyboard layout is US international.",
    "Prefers tabs over spaces in Go code.",
    "The secret ingredient is smoked paprika.",
    "Private key management is handled by the platform team.",
    "Calls the dog Pixel.",
    "Budget for the trip is 2,500 dollars.",
    "The build takes 4 minutes 12 seconds.",
    "Timestamp 1700000000 is November 2023.",
    "The card game night is on Fridays.",
    "Credit union branch is on Main Street.",
    "IBAN is asked for only by the payroll system.",
    "Likes the song 867-5309 by Tommy Tutone.",
    "Uses 1Password for the team vault.",
    "Account ID 42 in the staging tenant.",
    "The numbers 1111 2222 3333 are the lottery picks.",
    "Token ring networks were before their time.",
    "Access to the lab requires a badge.",
    "The API returns a 401 without a header.",
    "Request 0a1b2c3d-0000-4000-8000-000000000003 failed twice.",
    "Imported from mem0 memory 11111111-1111-4111-8111-111111111111.",
    "Category c0000000-0000-4000-8000-000000000003 holds the work notes.",
    "Her password is not to be kept here.",
    # documentation placeholders, as agent files and tool READMEs write them
    "Set apiKey: sk-ant-... in the config file.",
    "Export OPENAI_API_KEY=sk-... before running the agent.",
    "Authorization: Bearer <YOUR_API_KEY>",
    "api_key = <YOUR_API_KEY>",
    "API key: your-api-key-here",
    "api_key: xxxx",
    "access_token = xxxxxxxxxxxxxxxx",
    "apiKey: sk-ant-xxxxxxxxxxxxxxxxxxxx",
    "password: <YOUR_PASSWORD>",
    "The config reads password: ${DB_PASSWORD} from the environment.",
    "auth_token: {{AUTH_TOKEN}}",
    "api_key=$LETTA_API_KEY in the shell profile",
    "client_secret: YOUR_CLIENT_SECRET",
    "secret_key = ********",
    # from Letta's agent-file collection (ezra.af)
    "    apiKey: sk-ant-...",
    "Username=`letta`, Password=Letta API key (`sk-...`). Env var: `LETTA_API_KEY=sk-...`",
    *PROSE_CLEAN_TEXTS,
]

# Labelled texts for the health screen: each of these tells something about a person's health...
HEALTH_TEXTS = [
    "Was diagnosed with asthma as a child.",
    "Diagnosed with type 2 diabetes in 2021.",
    "Allergic to penicillin.",
    "Has a severe peanut allergy.",
    "Takes insulin before meals.",
    "Is on medication for high blood pressure.",
    "Was prescribed antibiotics last week.",
    "Has a prescription for sertraline.",
    "Goes to weekly therapy sessions on Thursdays.",
    "Gets migraines when she skips lunch.",
    "Is pregnant and due in March.",
    "Is being treated for depression.",
    "Has an anxiety disorder and avoids crowded meetings.",
    "Finished chemotherapy in May.",
    "His diagnosis is epilepsy; no flashing lights in demos.",
    "Has ADHD and prefers short written tasks.",
    "Started an antidepressant in January.",
    "Recovering from cancer surgery.",
    "Her son is diabetic; no sweets at the party.",
    "Was diagnosed with celiac disease last spring.",
]
# ...and none of these does (agent text that used to look like it).
NOT_HEALTH_TEXTS = [
    "Diagnosed a backlog issue in the sprint board.",
    "Diagnosed the flaky test as a race condition.",
    "Diagnosing the memory leak in the worker took two days.",
    "Diagnosed the build failure: a missing lockfile.",
    "The diagnosis of the outage points at the DNS cache.",
    "Follows the prescribed release checklist.",
    "Uses the prescribed commit message format.",
    "The API prescribes a retry order for failed calls.",
    "Prefers dark mode in the editor.",
    "Is building an iron farm in the Minecraft survival world.",
    "Decided to use PostgreSQL for the billing service.",
    "Runs 10 km on Sundays.",
    "Likes to cook Thai food on Fridays.",
    "Works from the Lisbon office on Mondays.",
    "Reads a chapter of a novel every night.",
    "Prescription of the query plan was diagnosed as a problem by the DBA.",
    "Has a standing one-on-one with Bob every Tuesday.",
    "Keeps the dog's vet appointments in the shared calendar.",
    "Diagnosed why the deploy timed out: the health check path was wrong.",
    "The agent diagnosed two regressions in the nightly build.",
    # from Letta's agent-file collection (void.af, ezra.af)
    "- Diagnosed a backlog issue I was experiencing, which was the correct diagnosis.",
    "- Status: diagnosed Mar 14, no fix yet",
    "- GOOD: mathegeek BYOK bug diagnosis -- correctly identified the blocked credits.",
    "- Note: Ezra hallucinated two versions during initial diagnosis.",
]


# Every screen's snapshot is taken at both sizes an operator's terminal is likely to have.
SNAPSHOT_SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def press(*keys: str, settle_each: bool = False) -> Any:
    """A snapshot's run_before: settle, press the keys (settling after each one when asked,
    for screens that open workers on every key), settle."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            if settle_each:
                await settle(pilot)
        await settle(pilot)

    return run_before


def merge_first_two(frame: Any, fields: dict[str, Any]) -> Any:
    """A consolidate-like pass's result for tests: the frame's first two maintainable rows are
    consolidated into one new memory with `fields` (recorded in the frame, as passes do)."""
    import numpy as np

    from memory_console.maintenance.changes import ChangeSet, NewMemory, PassResult

    ids = frame.ids[np.flatnonzero(frame.maintainable())[:2]]
    new = NewMemory(-1, "merge", {"content": "merged", **fields}, reason="near duplicates")
    members = ChangeSet.build(
        "merge",
        "consolidated",
        ids,
        {
            "status": (np.array(["active"] * 2), np.array(["consolidated"] * 2)),
            "consolidated_into": (
                np.array([None, None], dtype=object),
                np.array([-1, -1], dtype=object),
            ),
        },
        ["merged into a new memory"] * 2,
    )
    frame.record(members)
    return PassResult([members], [new], {"groups": 1})


def dialog_text(app: MemoryConsoleApp) -> str:
    """The title and body of the confirmation dialog on top."""
    from memory_console.tui.screens.confirm import ConfirmScreen

    screen = app.screen
    assert isinstance(screen, ConfirmScreen)
    return screen.title_text + " " + str(screen.body)


def keep_variant_choice(cache_dir: Path, variant: str) -> None:
    """Keep, in cache_dir, a calibration of this machine that chose `variant`: what a
    machine where that variant passed its checks and ran fastest keeps, so a test can exercise
    the rewritten graph's cache whichever variant this machine would pick."""
    from memory_console.embed import calibration
    from memory_console.embed.embedder import candidates_of, file_sha256, read_manifest

    manifest = read_manifest()
    key = calibration.machine_key(file_sha256(manifest.onnx.path), candidates_of(manifest))
    previous = os.environ.get("MEMORY_CONSOLE_CACHE_DIR")
    os.environ["MEMORY_CONSOLE_CACHE_DIR"] = str(cache_dir)
    try:
        calibration.keep(
            calibration.Calibration(key, variant, calibration.INDEX_FLOAT32, measured=False)
        )
    finally:
        if previous is None:
            del os.environ["MEMORY_CONSOLE_CACHE_DIR"]
        else:
            os.environ["MEMORY_CONSOLE_CACHE_DIR"] = previous

"""A store's URL as every line, file and banner names it: never with its password, whatever
form the URL takes, and a URL no client could read refused in one line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from memory_console.api import MemoryAPI
from memory_console.store import Store
from memory_console.store.postgres import shown_url
from memory_console.tui.app import postgres_title
from tests.helpers import ISO_NOW, invoke, one_error_line

# The password of every URL below holds both words; neither may be printed or written.
WORDS = ("Hunter2x", "Swordfish9")
CLOSED = "127.0.0.1:1"  # nothing listens there: a connection is refused at once

UNREACHABLE = {
    "user and password": f"postgresql://u:Hunter2xSwordfish9@{CLOSED}/db",
    "postgres scheme": f"postgres://u:Hunter2xSwordfish9@{CLOSED}/db",
    "upper-case scheme": f"POSTGRESQL://u:Hunter2xSwordfish9@{CLOSED}/db",
    "driver in the scheme": f"PostgreSQL+psycopg://u:Hunter2xSwordfish9@{CLOSED}/db",
    "password parameter": f"postgresql://u@{CLOSED}/db?password=Hunter2xSwordfish9",
    "among other parameters": (
        f"postgresql://u@{CLOSED}/db?sslmode=disable&password=Hunter2xSwordfish9&connect_timeout=3"
    ),
    "upper-case parameter": f"postgresql://u@{CLOSED}/db?PASSWORD=Hunter2xSwordfish9",
    "ssl key password with an '&'": f"postgresql://u@{CLOSED}/db?sslpassword=Hunter2x&Swordfish9",
    "unencoded '@'": f"postgresql://u:Hunter2x@Swordfish9@{CLOSED}/db",
    "unencoded ':'": f"postgresql://u:Hunter2x:Swordfish9@{CLOSED}/db",
    "unencoded '/'": f"postgresql://u:Hunter2x/Swordfish9@{CLOSED}/db",
    "unencoded '?'": f"postgresql://u:Hunter2x?Swordfish9@{CLOSED}/db",
    "percent-encoded": f"postgresql://u:Hunter2x%40Swordfish9%3A@{CLOSED}/db",
    "bad percent-encoding": f"postgresql://u:Hunter2x%4Swordfish9@{CLOSED}/db",
    "a space": f"postgresql://u:Hunter2x Swordfish9@{CLOSED}/db",
    "unclosed IPv6 host": "postgresql://u:Hunter2xSwordfish9@[::1/db",
    "one slash": f"postgresql:/u:Hunter2xSwordfish9@{CLOSED}/db",
    "another database's scheme": f"mysql://u:Hunter2xSwordfish9@{CLOSED}/db",
    "a connection string": "host=127.0.0.1 port=1 user=u password=Hunter2xSwordfish9",
}


def leaked(text: str) -> list[str]:
    return [word for word in WORDS if word in text]


def files_with_words(folder: Path) -> list[str]:
    return [
        str(path)
        for path in folder.rglob("*")
        if path.is_file() and leaked(path.read_bytes().decode("utf-8", "replace"))
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def small_store(path: Path) -> Path:
    with MemoryAPI(path, owner="alice", semantic=False) as api:
        api.remember("The team meets on Tuesdays at ten")
    return path


@pytest.mark.parametrize("url", UNREACHABLE.values(), ids=UNREACHABLE.keys())
def test_shown_url_hides_the_password_of_every_form(url: str) -> None:
    shown = shown_url(url)
    assert leaked(shown) == []
    assert shown  # a name is still shown


def test_shown_url_keeps_what_names_the_store() -> None:
    assert shown_url("postgresql://ann:secret@db:5432/mem") == "postgresql://ann@db:5432/mem"
    assert shown_url("POSTGRES://ann:s%40t@db/mem?sslmode=require") == (
        "POSTGRES://ann@db/mem?sslmode=require"
    )
    assert shown_url("postgresql://ann@db/mem?sslmode=require&password=x&a=b") == (
        "postgresql://ann@db/mem?sslmode=require"
    )
    assert shown_url("postgresql://db/mem") == "postgresql://db/mem"
    assert shown_url("/home/ann/memories.db") == "/home/ann/memories.db"
    assert shown_url(Path("C:/memories.db")) == str(Path("C:/memories.db"))


@pytest.mark.parametrize("url", UNREACHABLE.values(), ids=UNREACHABLE.keys())
def test_commands_name_an_unreachable_store_without_its_password(url: str, tmp_path: Path) -> None:
    """Each command that opens a store, given each form of URL to a closed port: one error
    line (no traceback), exit 1, and the password in no output and no file written."""
    source = small_store(tmp_path / "source.db")
    lines = tmp_path / "memories.jsonl"
    lines.write_text(json.dumps({"content": "Ann likes green tea"}) + "\n")
    commands = [
        ["stats", "--db", url],
        ["list", "--db", url, "--json"],
        ["show", "1", "--db", url],
        ["check", "--db", url],
        ["check", "--db", url, "--json"],
        ["maintain", "--dry-run", "--db", url, "--out", str(tmp_path / "plan.json")],
        ["maintain", "--dry-run", "--db", url, "--json", "--now", ISO_NOW],
        ["mcp", "--db", url, "--http", f"127.0.0.1:{free_port()}"],
        ["copy", url, str(tmp_path / "copy.db")],
        ["copy", str(source), url, "--json"],
        ["demo", "--db", url, "--count", "10", "--json"],
        ["import", str(lines), "--db", url],
        ["search", "tea", "--db", url, "--mode", "keyword"],
        ["config", "--db", url, "--json"],
        ["runs", "--db", url, "--json"],
    ]
    for argv in commands:
        result = invoke(argv)
        assert leaked(result.out + result.err) == [], (argv, result)
        assert "Traceback" not in result.err, (argv, result.err)
        one_error_line(result)
    assert files_with_words(tmp_path) == []


def test_doctor_names_an_unreachable_store_without_its_password() -> None:
    for url in (UNREACHABLE["password parameter"], UNREACHABLE["unclosed IPv6 host"]):
        result = invoke(["doctor", "--db", url, "--json"])
        assert result.code == 1 and leaked(result.out + result.err) == [], result


def test_a_url_no_client_reads_alike_is_refused_before_connecting() -> None:
    """A password whose '@' or '/' is not percent-encoded would be read by the server's
    client library with part of it as the host; an unclosed IPv6 bracket cannot be read."""
    for name in ("unencoded '@'", "unencoded '/'"):
        line = one_error_line(invoke(["stats", "--db", UNREACHABLE[name]]))
        assert "percent-encoded" in line and "cannot connect" not in line, line
    line = one_error_line(invoke(["stats", "--db", UNREACHABLE["unclosed IPv6 host"]]))
    assert "postgresql://u@[::1/db: " in line and "]" in line, line
    line = one_error_line(invoke(["stats", "--db", UNREACHABLE["another database's scheme"]]))
    assert "mysql://" in line and "postgresql://" in line, line


def test_an_upper_case_or_driver_scheme_reaches_the_server() -> None:
    """The scheme is read in any case and with a driver name, as the server's URL: the
    command gets as far as the connection (refused at the closed port)."""
    for name in ("upper-case scheme", "driver in the scheme"):
        line = one_error_line(invoke(["stats", "--db", UNREACHABLE[name]]))
        assert "cannot connect" in line and "Connection refused" in line, line


# -- a server that answers -------------------------------------------------------------------


def reachable_forms(url: str) -> dict[str, str]:
    """The test server's URL (trust authentication: any password is accepted) written with
    a password in each form a client reads."""
    assert url.startswith("postgresql://postgres:@/"), url
    tail = url.removeprefix("postgresql://postgres:@")
    return {
        "user and password": f"postgresql://postgres:Hunter2xSwordfish9@{tail}",
        "upper-case scheme": f"POSTGRES://postgres:Hunter2xSwordfish9@{tail}",
        "driver in the scheme": f"postgresql+psycopg://postgres:Hunter2xSwordfish9@{tail}",
        "password parameter": f"postgresql://postgres@{tail}&password=Hunter2xSwordfish9",
        "percent-encoded": f"postgresql://postgres:Hunter2x%40Swordfish9%2F@{tail}",
        "unencoded ':'": f"postgresql://postgres:Hunter2x:Swordfish9@{tail}",
    }


def mcp_banner(url: str) -> str:
    """What `mcp` says on stderr when it starts on stdio (its input closed: it then ends)."""
    done = subprocess.run(
        [sys.executable, "-m", "memory_console.cli", "mcp", "--db", url, "--keyword-only"],
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_reachable_store_is_named_without_its_password(pg_url: str, tmp_path: Path) -> None:
    """A PostgreSQL store opened through each form: the MCP banner (another process), the
    --json reports, the plan file's store and the console's title never hold the password."""
    forms = reachable_forms(pg_url)
    made = invoke(["demo", "--db", forms["password parameter"], "--count", "40", "--json"])
    assert made.code == 0, made
    assert leaked(made.out + made.err) == [] and json.loads(made.out)["db"]
    for number, (name, url) in enumerate(forms.items()):
        plan_path = tmp_path / f"plan{number}.json"
        for argv in (
            ["stats", "--db", url, "--json"],
            ["check", "--db", url, "--json"],
            ["list", "--db", url, "--json", "--limit", "3"],
            ["runs", "--db", url, "--json"],
            ["maintain", "--dry-run", "--db", url, "--now", ISO_NOW, "--json"],
            ["maintain", "--dry-run", "--db", url, "--now", ISO_NOW, "--out", str(plan_path)],
            ["copy", url, str(tmp_path / f"copy{number}.db"), "--json"],
        ):
            result = invoke(argv)
            assert result.code == 0, (name, argv, result)
            assert leaked(result.out + result.err) == [], (name, argv, result)
        plan = json.loads(plan_path.read_text())
        assert leaked(plan["store"]) == [] and plan["store"].startswith(url[:8]), plan["store"]
        with Store(url, read_only=True) as store:
            assert leaked(store.location + store.identity + postgres_title(store.location)) == []
    doctor = invoke(["doctor", "--db", forms["percent-encoded"], "--json"])
    assert leaked(doctor.out + doctor.err) == [] and "Traceback" not in doctor.err, doctor
    banner = mcp_banner(forms["password parameter"])
    assert "MCP server on stdio: postgresql://postgres@/" in banner and leaked(banner) == []
    assert files_with_words(tmp_path) == []

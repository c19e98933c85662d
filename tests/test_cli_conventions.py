"""The CLI behaves like the tools operators already use: `python -m`, shell completion, `-` for
standard input and output, quiet closed pipes, help with examples, progress and notes on
stderr, --verbose/--quiet, and bad environment values named."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_console.cli import build_parser
from memory_console.demo import build_demo
from memory_console.settings import load_settings
from tests.helpers import NOW, invoke, one_error_line, terminal_output

PROGRAM = [sys.executable, "-m", "memory_console"]


def run(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """The program in a child process (its own stdin, stdout and stderr)."""
    return subprocess.run(
        [*PROGRAM, *argv], input=stdin, capture_output=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3,000-memory demo store, large enough that no command's output fits a pipe buffer."""
    path = tmp_path_factory.mktemp("conventions") / "demo.db"
    build_demo(path, count=3000, seed=3, now=NOW)
    return path


@pytest.fixture
def jsonl(tmp_path: Path) -> bytes:
    rows = [
        {"owner": "alice", "topic": "preferences", "content": "Prefers tea to coffee"},
        {"owner": "bob", "topic": "projects", "content": "Is building an iron farm"},
    ]
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


# -- python -m ------------------------------------------------------------------------------


def test_python_dash_m_runs_the_entry_point(tmp_path: Path) -> None:
    done = run("--version")
    assert done.returncode == 0 and done.stdout.decode().startswith("memory-console ")
    done = run("stats", "--db", str(tmp_path / "none.db"))
    assert done.returncode == 1 and done.stderr.decode().startswith("memory-console: error: ")


# -- completion -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = invoke(["completion", "bash"])
    assert result.code == 0 and result.err == ""
    path = tmp_path_factory.mktemp("completion") / "memory-console.bash"
    path.write_text(result.out)
    return path


def bash_complete(script: Path, words: list[str], cwd: Path | None = None) -> list[str]:
    """What bash's completion offers for the last of `words` (COMP_WORDS, COMP_CWORD)."""
    line = " ".join(shlex.quote(word) for word in words)
    program = (
        f"source {shlex.quote(str(script))}; COMP_WORDS=({line}); "
        f"COMP_CWORD={len(words) - 1}; _memory_console; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    done = subprocess.run(
        ["bash", "-c", program], capture_output=True, text=True, cwd=cwd, check=True
    )
    assert done.stderr == ""
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completion_offers_commands_options_and_choices(
    bash_script: Path, tmp_path: Path
) -> None:
    complete = bash_script
    commands = bash_complete(complete, ["memory-console", ""])
    assert {"list", "import", "export", "maintain", "erase-report", "completion"} <= set(commands)
    assert bash_complete(complete, ["memory-console", "ma"]) == ["maintain"]
    assert bash_complete(complete, ["memory-console", "list", "--ow"]) == ["--owner"]
    # The value of an option before the command is skipped, not taken for a command.
    assert bash_complete(complete, ["memory-console", "--db", "x.db", "list", "--st"]) == [
        "--status"
    ]
    statuses = bash_complete(complete, ["memory-console", "list", "--status", ""])
    assert statuses == ["active", "archived", "consolidated"]
    assert bash_complete(complete, ["memory-console", "config", ""]) == ["set", "history"]
    assert "--by" in bash_complete(complete, ["memory-console", "config", "set", "--"])
    assert bash_complete(complete, ["memory-console", "completion", ""]) == ["bash", "zsh", "fish"]
    assert "--skip-stale" in bash_complete(complete, ["memory-console", "maintain", "--s"])
    (tmp_path / "plan.json").write_text("{}")
    files = bash_complete(complete, ["memory-console", "export", "--out", "pl"], cwd=tmp_path)
    assert files == ["plan.json"]


def test_zsh_and_fish_scripts(tmp_path: Path) -> None:
    assert invoke(["completion", "tcsh"]).code == 2  # usage: bash, zsh or fish
    for shell in ("zsh", "fish"):
        result = invoke(["completion", shell])
        assert result.code == 0 and "memory-console" in result.out
        if shutil.which(shell) is None:
            continue
        script = tmp_path / f"completion.{shell}"
        script.write_text(result.out)
        subprocess.run([shell, "-n", str(script)], check=True)
    if shutil.which("fish") is not None:
        program = (
            f"source {tmp_path / 'completion.fish'}; complete -C 'memory-console li'; "
            "complete -C 'memory-console list --status '"
        )
        done = subprocess.run(["fish", "-c", program], capture_output=True, text=True)
        offered = [line.split("\t")[0] for line in done.stdout.splitlines()]
        assert offered == ["list", "active", "archived", "consolidated"]


# -- `-` is standard input and standard output ---------------------------------------------------


def test_import_dash_reads_standard_input(tmp_path: Path, jsonl: bytes) -> None:
    db = tmp_path / "memories.db"
    done = run("import", "-", "--db", str(db), stdin=jsonl)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith("imported 2 memories from standard input (jsonl)")
    listed = json.loads(run("list", "--db", str(db), "--json").stdout)
    assert [row["content"] for row in listed] == [
        "Prefers tea to coffee",
        "Is building an iron farm",
    ]
    # A bad line is named as a line of `-`, not of a temporary copy.
    bad = run("import", "-", "--db", str(tmp_path / "other.db"), stdin=b'{"content": 5}\n')
    assert bad.returncode == 1
    assert bad.stderr.decode().startswith("memory-console: error: -:1: ")
    assert not (tmp_path / "other.db").exists()


def test_export_out_dash_writes_standard_output(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(["export", "--db", str(demo), "--out", "-"])
    assert result.code == 0 and result.err == ""
    rows = [json.loads(line) for line in result.out.splitlines()]
    assert len(rows) > 2000 and rows[0]["id"] == 1
    assert not (tmp_path / "-").exists()
    # A file literally named - is still reached as ./-, to write and to read.
    result = invoke(["export", "--db", str(demo), "--out", "./-", "--quiet"])
    assert result.code == 0 and result.out == "" and result.err == ""
    assert len((tmp_path / "-").read_text().splitlines()) == len(rows)
    result = invoke(["import", "./-", "--db", "copy.db", "--allow-secrets", "--allow-health"])
    assert result.code == 0 and result.out.startswith(f"imported {len(rows):,} memories from -")


# -- a closed pipe -------------------------------------------------------------------------------

PRINTING_COMMANDS = [
    ["list", "--limit", "3000", "--db"],
    ["list", "--limit", "3000", "--json", "--db"],
    ["export", "--history", "--db"],
    ["show", "1", "--db"],
    ["stats", "--db"],
    ["search", "the", "--mode", "keyword", "--k", "2000", "--db"],
    ["erase-report", "--owner", "alice", "--db"],
    ["decay", "--dry-run", "--top", "2000", "--db"],
    ["config", "--db"],
    ["check", "--db"],
    ["completion", "bash"],
    ["--help"],
    ["list", "--help"],
]


@pytest.mark.parametrize("argv", PRINTING_COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_a_closed_pipe_ends_quietly(demo: Path, argv: list[str]) -> None:
    """The reader is gone before the first write (`| head -0`): status 0, nothing on stderr."""
    if argv[-1] == "--db":
        argv = [*argv, str(demo)]
    child = subprocess.Popen([*PROGRAM, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read()
    assert child.wait(timeout=300) == 0 and err == b""


def test_pipe_into_head(demo: Path) -> None:
    """`memory-console list ... | head -1` as a shell runs it."""
    command = shlex.join([*PROGRAM, "list", "--limit", "3000", "--db", str(demo)])
    done = subprocess.run(
        ["bash", "-c", f"{command} 2>err.txt | head -1; echo ${{PIPESTATUS[0]}}; cat err.txt"],
        capture_output=True,
        text=True,
        cwd=demo.parent,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and "id" in lines[0] and lines[1] == "0"


# -- help -------------------------------------------------------------------------------------


def subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from subcommands(sub, (*path, name))


def test_every_option_has_help_and_every_command_examples() -> None:
    parser = build_parser()
    walked = list(subcommands(parser))
    assert len(walked) > 25  # every command, with config's set and history
    missing = [
        f"{' '.join(path) or 'memory-console'} {action.option_strings or action.dest}"
        for path, sub in walked
        for action in sub._actions
        if not isinstance(action, argparse._SubParsersAction) and not action.help
    ]
    assert missing == []
    for path, sub in walked:
        epilog = sub.epilog or ""
        lines = epilog.splitlines()
        assert lines[0] == "examples:" and 2 <= len(lines) <= 4, path
        shown = sub.format_help().rstrip().splitlines()
        assert shown[-len(lines) + 1 :] == lines[1:], path  # the help ends with them, unwrapped
        for example in lines[1:]:
            words = shlex.split(example)
            cut = next((i for i, w in enumerate(words) if w in ("<", ">", "|")), len(words))
            assert words[0] == "memory-console"
            parser.parse_args(words[1:cut])  # each example parses
            assert tuple(words[1 : 1 + len(path)]) == path or not path


# -- progress, --verbose and --quiet -----------------------------------------------------------


def test_reindex_output_redirected_has_no_blank_line(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"
    build_demo(db, count=60, seed=2, now=NOW)
    done = run("reindex", "--db", str(db))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("embedded ")


def run_with_terminal_stderr(argv: list[str]) -> tuple[int, str, str]:
    """The program with stderr on a pseudo-terminal and stdout on a pipe."""
    import pty

    leader, follower = pty.openpty()
    child = subprocess.Popen([*PROGRAM, *argv], stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    shown = b""
    while chunk := terminal_output(leader):
        shown += chunk
    assert child.stdout is not None
    out = child.stdout.read().decode()
    os.close(leader)
    return child.wait(timeout=300), out, shown.decode(errors="replace")


def test_progress_goes_to_a_terminal_stderr_never_stdout(tmp_path: Path) -> None:
    code, out, terminal = run_with_terminal_stderr(
        ["demo", "--db", str(tmp_path / "a.db"), "--count", "3000"]
    )
    assert code == 0
    assert out.startswith("created ") and len(out.splitlines()) == 1
    assert "creating the demo store" in terminal
    code, out, terminal = run_with_terminal_stderr(
        ["-q", "demo", "--db", str(tmp_path / "b.db"), "--count", "3000"]
    )
    assert code == 0 and out.startswith("created ") and terminal == ""


def test_no_progress_when_stderr_is_not_a_terminal_and_the_job_is_quick(tmp_path: Path) -> None:
    done = run("demo", "--db", str(tmp_path / "a.db"), "--count", "3000")
    assert done.returncode == 0 and done.stderr == b""


def progress_lines(err: str) -> list[str]:
    share = re.compile(r": (?:[\d,]+ of [\d,]+ \(\d+%\)|\d+%)$")
    return [line for line in err.splitlines() if share.search(line)]


def test_long_jobs_say_each_quarter_in_plain_lines_when_stderr_is_not_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where stderr is a log or a pipe, a job that runs long (here: at once) says a few plain
    lines, one per quarter passed (demo, export, import of our JSONL and of a peer format,
    planning, applying, reindex); -q says none."""
    from memory_console.commands import common

    monkeypatch.setattr(common, "PLAIN_DELAY", 0.0)
    db = str(tmp_path / "memories.db")
    made = invoke(["demo", "--db", db, "--count", "2000"])
    assert made.code == 0
    shares = progress_lines(made.err)
    assert 1 <= len(shares) <= 3 and all(
        line.startswith("memory-console: creating the demo store: ") for line in shares
    )
    out = str(tmp_path / "out.jsonl")
    exported = invoke(["export", "--all", "--history", "--db", db, "--out", out])
    assert progress_lines(exported.err) == [
        "memory-console: exporting (jsonl): 500 of 2,000 (25%)",
        "memory-console: exporting (jsonl): 1,000 of 2,000 (50%)",
        "memory-console: exporting (jsonl): 1,500 of 2,000 (75%)",
    ]
    assert exported.err.splitlines()[-1].startswith("memory-console: exported 2,000 memories")
    imported = invoke(
        ["import", out, "--db", str(tmp_path / "copy.db"), "--allow-secrets", "--allow-health"]
    )
    assert imported.code == 0, imported.err
    assert progress_lines(imported.err) == [
        f"memory-console: importing {out}: {done:,} of 2,000 ({share}%)"
        for done, share in ((500, 25), (1000, 50), (1500, 75))
    ]
    planned = invoke(["maintain", "--dry-run", "--db", db, "--json"])
    assert planned.code == 0
    lines = progress_lines(planned.err)
    assert 2 <= len(lines) <= 3 and all(
        line.startswith("memory-console: planning ") for line in lines
    )
    peer = str(tmp_path / "mem0.jsonl")
    assert invoke(["export", "--all", "--format", "mem0", "--db", db, "--out", peer]).code == 0
    imported = invoke(
        ["import", peer, "--db", str(tmp_path / "peer.db"), "--allow-secrets", "--allow-health"]
    )
    assert imported.code == 0, imported.err
    assert progress_lines(imported.err) == [
        f"memory-console: importing {peer}: {done:,} of 2,000 ({share}%)"
        for done, share in ((500, 25), (1000, 50), (1500, 75))
    ]
    applied = invoke(["maintain", "--apply", "--db", db])
    assert applied.code == 0, applied.err
    lines = [line for line in progress_lines(applied.err) if " applying " in line]
    assert 1 <= len(lines) <= 3 and all(
        re.fullmatch(r"memory-console: applying [\d,]+ changes: [\d,]+ of [\d,]+ \(\d+%\)", line)
        for line in lines
    ), applied.err
    reindexed = invoke(["reindex", "--db", db])
    assert reindexed.code == 0
    assert progress_lines(reindexed.err)[0].startswith("memory-console: embedding: ")
    for argv in (["export", "--db", db, "--out", out], ["reindex", "--db", db]):
        assert invoke(["-q", *argv]).err == ""


def test_verbose_names_the_store_settings_file_model_and_kernel(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"
    build_demo(db, count=60, seed=2, now=NOW)
    assert run("-q", "reindex", "--db", str(db)).returncode == 0
    done = run("-v", "search", "tea", "--db", str(db))
    assert done.returncode == 0
    err = done.stderr.decode()
    assert f"memory-console: store: {db.resolve()} (writable)" in err
    assert "memory-console: settings file: " in err and "config.toml" in err
    assert "memory-console: model: all-MiniLM-L6-v2" in err
    assert "memory-console: scan kernel: float32 matrix product" in err
    # After the command as well as before it.
    assert "scan kernel" in run("search", "tea", "--db", str(db), "--verbose").stderr.decode()
    assert run("search", "tea", "--db", str(db)).stderr == b""


def test_quiet_silences_notes_not_errors(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    noted = invoke(["export", "--db", str(demo), "--out", str(out)])
    assert noted.code == 0 and noted.err.startswith("memory-console: exported ")
    quiet = invoke(["export", "--db", str(demo), "--out", str(out), "--quiet"])
    assert quiet.code == 0 and quiet.err == ""
    failed = invoke(["-q", "show", "999999", "--db", str(demo)])
    assert one_error_line(failed) == "memory-console: error: no memory with id 999999"


# -- environment values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("MEMORY_CONSOLE_PAGE_SIZE", "abc", "a whole number from 1 to 100,000"),
        ("MEMORY_CONSOLE_PAGE_SIZE", "0", "a whole number from 1 to 100,000"),
        ("MEMORY_CONSOLE_READ_ONLY", "maybe", "true or false"),
        ("MEMORY_CONSOLE_VECTOR_MEMORY_MB", "-1", "a whole number of megabytes, 0 or more"),
        ("MEMORY_CONSOLE_VECTOR_MEMORY_MB", "lots", "a whole number of megabytes, 0 or more"),
        ("MEMORY_CONSOLE_MERGE_COMMAND", "summarise 'unclosed", "a command line"),
    ],
)
def test_a_bad_environment_value_names_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    line = one_error_line(invoke(["stats", "--db", str(tmp_path / "none.db")]))
    assert line.startswith(f"memory-console: error: {variable}={value!r}: expected {expected}")


def test_a_directory_variable_naming_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("MEMORY_CONSOLE_DATA_DIR", str(tmp_path / "file"))
    line = one_error_line(invoke(["stats"]))
    assert line == f"memory-console: error: MEMORY_CONSOLE_DATA_DIR='{tmp_path / 'file'}': " + (
        "not a directory"
    )


def test_a_bad_settings_file_value_names_the_file_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "config.toml").write_text('page_size = "many"\n')
    monkeypatch.setenv("MEMORY_CONSOLE_CONFIG_DIR", str(folder))
    line = one_error_line(invoke(["stats", "--db", str(tmp_path / "none.db")]))
    assert line.startswith(f"memory-console: error: {folder / 'config.toml'}: page_size='many'")
    (folder / "config.toml").write_text("page_size = 30\nread_only = true\n")
    assert load_settings().read_only is True
    monkeypatch.setenv("MEMORY_CONSOLE_READ_ONLY", "off")  # the variable wins over the file
    settings = load_settings()
    assert settings.page_size == 30 and settings.read_only is False

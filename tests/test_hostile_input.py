"""Hostile input: fuzzed import files and CLI arguments, broken, foreign and full store files."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_console.cli import build_parser, main
from memory_console.store import Store, db
from memory_console.store.validate import MAX_TEXT
from memory_console.store.vocab import MEMORY_TYPES, TIERS
from tests.helpers import ISO_NOW, count, digest, fill, invoke, one_error_line, small_disk

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- the importer ---------------------------------------------------------------------------

WORDS = [
    "Prefers",
    "tea",
    "dark mode",
    "weekly sync",
    "with Bob",
    "Lisbon",
    "café",
    "日本語",
    "🙂",
    'a "quoted" word',
    "back\\slash",
    "tab\there",
    "line\nbreak",
]
safe_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)
unit = st.floats(min_value=0.0, max_value=1.0)
valid_memory = st.fixed_dictionaries(
    {"content": safe_text},
    optional={
        "owner": st.sampled_from(["alice", "bob"]),
        "topic": st.sampled_from(["preferences", "projects"]),
        "tier": st.sampled_from(TIERS),
        "memory_type": st.sampled_from(MEMORY_TYPES),
        "confidence": unit,
        "importance": unit,
        "retrieval_count": st.integers(0, 10_000),
        "created_at": st.sampled_from(
            ["2025-01-01T00:00:00Z", "2026-06-30T12:00:00+02:00", 1_700_000_000]
        ),
        "keywords": st.lists(st.sampled_from(["tea", "mode", "sync"]), max_size=3),
        "is_protected": st.booleans(),
        "session": safe_text,  # an unknown field: it goes into metadata
    },
)


def as_line(data: dict[str, Any], *, ascii_only: bool = False) -> bytes:
    return json.dumps(data, ensure_ascii=ascii_only).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Hostile:
    """A bad line (with the lines it needs before it) and a word its error must name."""

    line: bytes
    names: str
    before: tuple[bytes, ...] = ()


def with_field(name: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[Hostile]:
    return st.builds(
        lambda memory, value: Hostile(as_line({**memory, name: value}, ascii_only=True), name),
        valid_memory,
        values,
    )


def truncated(memory: dict[str, Any], cut: float) -> Hostile:
    line = as_line(memory, ascii_only=True)
    return Hostile(line[: max(1, int(len(line) * cut))], "invalid JSON")


def bad_bytes(text: str, raw: bytes) -> Hostile:
    escaped = json.dumps(text)[1:-1].encode()
    return Hostile(b'{"content": "' + escaped + raw + b' tail"}', "invalid UTF-8")


def duplicate(memory: dict[str, Any], ident: int) -> Hostile:
    first = as_line({**memory, "id": ident})
    return Hostile(as_line({**memory, "id": ident}), f"duplicate id {ident}", (first,))


wrong_types = st.sampled_from(
    [
        ("content", 5),
        ("content", ["tea"]),
        ("content", {"a": 1}),
        ("confidence", "high"),
        ("retrieval_count", "3"),
        ("retrieval_count", 1.5),
        ("keywords", 5),
        ("keywords", [1]),
        ("metadata", [1]),
        ("metadata", "not json"),
        ("created_at", [2020]),
        ("created_at", True),
        ("is_protected", "yes"),
        ("tier", "attic"),
        ("status", 3),
        ("owner", 7),
        ("title", {}),
        ("external_id", 1.5),
        ("history", "yesterday"),
        ("history", [{"kind": "exploded"}]),
    ]
)
out_of_range_dates = st.sampled_from(
    [
        "0001-01-01T00:00:00Z",
        "1969-12-31T23:59:59Z",
        "10000-01-01",
        "2026-13-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "yesterday",
        "",
        -1,
        -1e300,
        1e300,
        253_402_300_800,
        float("inf"),
    ]
)
outside_unit = st.floats(allow_nan=True, allow_infinity=True).filter(
    lambda x: not 0.0 <= x <= 1.0
) | st.integers().filter(lambda x: not 0 <= x <= 1)

hostile_line = st.one_of(
    st.builds(truncated, valid_memory, st.floats(min_value=0.01, max_value=0.99)),
    wrong_types.flatmap(lambda pair: with_field(pair[0], st.just(pair[1]))),
    st.sampled_from(
        [
            Hostile(as_line({"content": "x" * (MAX_TEXT + 1)}), "content is 1,000,001 characters"),
            Hostile(as_line({"content": "tea", "title": "t" * 501}), "title is 501 characters"),
            Hostile(as_line({"content": "tea", "keywords": ["k" * 501]}), "keyword is"),
            Hostile(as_line({"content": "tea", "note": "n" * MAX_TEXT}), "metadata is"),
            Hostile(as_line({"content": "a\x00b"}), "NUL byte"),
            Hostile(b'{"content": "a\x00b"}', "invalid JSON"),
            Hostile(b'{"content": "tea"}\x00', "invalid JSON"),
            Hostile(as_line({"content": "a\ud800b"}, ascii_only=True), "unpaired surrogate"),
            Hostile(as_line({"content": "tea", "owner": "\udc80"}, ascii_only=True), "surrogate"),
            Hostile(b'{"content": "tea", "retrieval_count": ' + b"9" * 5000 + b"}", "invalid JSON"),
            Hostile(
                b'{"content": "tea", "metadata": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_001,
                "nested too deeply",
            ),
            Hostile(b'{"content": "tea", "confidence": 1' + b"0" * 400 + b"}", "confidence"),
            Hostile(b'{"content": "tea", "created_at": 1' + b"0" * 400 + b"}", "created_at"),
            Hostile(b"[1, 2]", "must be a JSON object"),
            Hostile(b'"just a string"', "must be a JSON object"),
            Hostile(b'{"topic": "no content"}', "content is required"),
            Hostile(b'{"content": null}', "content"),
            Hostile(b'{"content": "   "}', "content is empty"),
            Hostile(
                as_line(
                    {
                        "content": "tea",
                        "created_at": "2026-01-02T00:00:00Z",
                        "last_accessed_at": "2026-01-01T00:00:00Z",
                    }
                ),
                "last_accessed_at",
            ),
        ]
    ),
    st.builds(
        bad_bytes,
        safe_text,
        st.sampled_from(
            [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\x80"]
        ),
    ),
    with_field("created_at", out_of_range_dates),
    with_field("last_accessed_at", st.sampled_from(["0001-01-01T00:00:00Z", -5, "nope"])),
    with_field("retrieval_count", st.integers(max_value=-1)),
    with_field("id", st.integers(max_value=0) | st.sampled_from([2**63, 1.5, "7", True])),
    with_field("consolidated_into", st.integers(max_value=-1)),
    st.sampled_from(["confidence", "importance", "base_confidence"]).flatmap(
        lambda name: with_field(name, outside_unit)
    ),
    st.builds(duplicate, valid_memory, st.integers(1_000_000, 2_000_000)),
)


@pytest.fixture
def import_target(tmp_path: Path) -> tuple[Path, Path]:
    """A store with one memory and the path an import file is written to."""
    store_path = tmp_path / "store.db"
    with Store(store_path) as store:
        store.add({"content": "Already here."})
    return store_path, tmp_path / "input.jsonl"


def test_each_hostile_line_names_file_and_line_and_imports_nothing(
    import_target: tuple[Path, Path],
) -> None:
    store_path, path = import_target

    @FUZZ
    @given(
        before=st.lists(valid_memory, max_size=3),
        blanks=st.integers(0, 2),
        hostile=hostile_line,
        after=st.lists(valid_memory, max_size=2),
    )
    def check(
        before: list[dict[str, Any]], blanks: int, hostile: Hostile, after: list[dict[str, Any]]
    ) -> None:
        lines = [as_line(m) for m in before] + [b""] * blanks + list(hostile.before)
        lines.append(hostile.line)
        number = len(lines)
        lines += [as_line(m) for m in after]
        path.write_bytes(b"\n".join(lines) + b"\n")
        result = invoke(["import", str(path), "--db", str(store_path), "--now", ISO_NOW])
        line = one_error_line(result)
        assert line.startswith(f"memory-console: error: {path}:{number}: "), line
        assert hostile.names in line, line
        assert len(line) < 400, "an error names the fault, it does not echo the input"
        assert count(store_path) == 1

    check()


json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
PEER_KEYS = [
    "content",
    "memory",
    "memory_id",
    "event",
    "type",
    "name",
    "entityType",
    "observations",
    "from",
    "to",
    "relationType",
    "text",
    "state",
    "value",
    "label",
    "blocks",
    "agents",
    "id",
    "user_id",
    "hash",
    "metadata",
    "created_at",
    "categories",
    "app",
    "passages",
    "results",
    "history",
    "confidence",
    "kind",
    "at",
    "tags",
]
json_value = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(PEER_KEYS) | st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)
junk_line = st.one_of(
    st.binary(max_size=40),
    json_value.map(lambda value: json.dumps(value).encode()),
    st.dictionaries(st.sampled_from(PEER_KEYS), json_value, max_size=6).map(
        lambda value: json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    ),
    valid_memory.map(as_line),
)


def test_any_file_in_any_format_imports_whole_or_not_at_all(
    import_target: tuple[Path, Path],
) -> None:
    store_path, path = import_target

    @FUZZ
    @given(
        lines=st.lists(junk_line, max_size=5),
        file_format=st.sampled_from(["auto", "jsonl", "mem0", "openmemory", "letta", "mcp"]),
        gzipped=st.booleans(),
    )
    def check(lines: list[bytes], file_format: str, gzipped: bool) -> None:
        data = b"\n".join(lines) + b"\n"
        if gzipped:
            import gzip

            data = gzip.compress(data)
        path.write_bytes(data)
        before = count(store_path)
        argv = [
            "import",
            str(path),
            "--db",
            str(store_path),
            "--format",
            file_format,
            "--now",
            ISO_NOW,
            "--json",
            "--new-ids",
        ]
        result = invoke(argv)
        if result.code == 0:
            assert count(store_path) == before + json.loads(result.out)["imported"]
        else:
            line = one_error_line(result)
            assert line.startswith(f"memory-console: error: {path}"), line
            assert count(store_path) == before

    check()


@pytest.mark.parametrize(
    ("line", "names"),
    [
        (as_line({"content": "c" * 10_000_000}), ":2: content is 10,000,000 characters"),
        (as_line({"content": "tea", "title": "t" * 10_000_000}), ":2: title is 10,000,000"),
        (as_line({"content": "tea", "note": "n" * 10_000_000}), ":2: metadata is 10,000,"),
        (as_line({"content": "tea", "keywords": ["k"] * 2_000_000}), ":2: keywords"),
        (as_line({"content": "c" * 17_000_000}), ":2: line longer than 16,777,216 bytes"),
    ],
    ids=["content", "title", "metadata", "keywords", "line"],
)
def test_ten_megabyte_fields_are_refused(
    import_target: tuple[Path, Path], line: bytes, names: str
) -> None:
    store_path, path = import_target
    path.write_bytes(b'{"content": "fine"}\n' + line + b'\n{"content": "also fine"}\n')
    result = invoke(["import", str(path), "--db", str(store_path)])
    assert f"{path}{names}" in one_error_line(result)
    assert count(store_path) == 1


def test_a_one_line_export_with_history_is_ours_not_mem0(
    import_target: tuple[Path, Path],
) -> None:
    store_path, path = import_target
    line = {
        "content": "Likes tea",
        "history": [{"at": "2026-01-01T00:00:00Z", "kind": "created", "actor": "cli"}],
    }
    path.write_text(json.dumps(line) + "\n")
    result = invoke(["import", str(path), "--db", str(store_path), "--json"])
    assert result.code == 0 and json.loads(result.out)["format"] == "jsonl", result.err


# -- every CLI command, with hypothesis-made arguments ----------------------------------------

HOSTILE_WORDS = [
    "",
    " ",
    "0",
    "1",
    "2",
    "-1",
    "3",
    "99999999999999999999",
    "1e309",
    "nan",
    "inf",
    "-inf",
    "0.5",
    "x",
    "é",
    "\udcff",
    "\udc80abc",
    "a,b",
    "1,,2",
    ",",
    "--",
    "-",
    "--json",
    "-h",
    "2026-01-01T00:00:00Z",
    "0001-01-01",
    "9999-12-31T23:59:59Z",
    "2026-02-30",
    "*",
    '"',
    "'",
    "NEAR(",
    "a OR",
    "%s",
    "../..",
    "password = hunter22",
    "🙂" * 30,
]
hostile_word = st.sampled_from(HOSTILE_WORDS) | st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=8
).filter(lambda word: not word.startswith("/"))  # an --out never lands outside the test's folder
ID_WORDS = [
    "1",
    "2",
    "3",
    "1,2",
    "0",
    "-1",
    "x",
    "99999999999999999999",
    "4611686018427387905",
    ",",
    "2,,3",
]
COUNT_WORDS = ["1", "3", "0", "-1", "x", "1e3", "99999999999999999999", "10000001"]


@dataclass(frozen=True, slots=True)
class Places:
    """Files the fuzzed arguments may name."""

    store: Path
    folder: Path

    def files(self) -> list[str]:
        return [
            str(self.folder / name)
            for name in (
                "good.jsonl",
                "bad.jsonl",
                "secret.jsonl",
                "junk.gz",
                "none.jsonl",
                "mem0.jsonl",
                "export.zip",
            )
        ] + [str(self.folder), str(self.store), "/dev/null"]

    def outputs(self) -> list[str]:
        return [
            str(self.folder / "out.jsonl"),
            str(self.folder),
            str(self.store),
            str(self.folder / "missing" / "x.jsonl"),
            f"{self.store}-wal",
            str(self.folder / "full"),
        ]


def device(path: Path) -> None:
    """A private /dev/full (writes fail with ENOSPC) where device nodes can be made, else a
    plain file."""
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 7))
    except OSError:
        path.write_text("")


def prepare_places(tmp_path: Path) -> Places:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "good.jsonl").write_text('{"content": "Likes green tea"}\n')
    (folder / "bad.jsonl").write_text('{"content": "ok"}\n{"content": \n')
    (folder / "secret.jsonl").write_text('{"content": "wifi password = hunter22x"}\n')
    (folder / "junk.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    (folder / "mem0.jsonl").write_text('{"id": "m-1", "memory": "Likes jazz"}\n')
    with zipfile.ZipFile(folder / "export.zip", "w") as archive:
        archive.writestr("memories.json", "{not json")
    device(folder / "full")
    store = tmp_path / "fuzz.db"
    assert invoke(["demo", "--count", "40", "--seed", "3", "--db", str(store)]).code == 0
    return Places(store, folder)


def option_values(action: Any, command: str, places: Places) -> st.SearchStrategy[str]:
    """Values for one argument: its choices and files where it has them, mostly, and
    hostile words always."""
    dest = action.dest
    if action.choices:
        return st.sampled_from(sorted(map(str, action.choices))) | hostile_word
    if dest == "count":
        return st.sampled_from(COUNT_WORDS)
    if dest in ("ids", "id", "run_id"):
        return st.sampled_from(ID_WORDS) | hostile_word
    if dest == "file":
        return st.sampled_from(places.files()) | hostile_word
    if dest in ("out", "model_manifest"):
        return st.sampled_from(places.outputs()) | hostile_word
    return hostile_word


@st.composite
def command_line(draw: st.DrawFn, places: Places) -> list[str]:
    """A command with some of its options, each with a value from option_values."""
    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.dest == "command"]
    name = draw(st.sampled_from(sorted(commands.choices)))
    sub = commands.choices[name]
    argv: list[str] = []
    if draw(st.integers(0, 5)) == 0:
        argv.append(draw(st.sampled_from(["--read-only", "--demo"])))
    argv.append(name)
    for action in sub._actions:
        if action.option_strings or action.dest == "help":
            continue
        many = action.nargs in ("+", "*")
        for _ in range(draw(st.integers(1, 3)) if many else 1):
            argv.append(draw(option_values(action, name, places)))
    optional = [a for a in sub._actions if a.option_strings and a.dest not in ("help", "db")]
    for action in draw(st.lists(st.sampled_from(optional), max_size=4, unique_by=id)):
        argv.append(draw(st.sampled_from(action.option_strings)))
        if action.nargs != 0:
            argv.append(draw(option_values(action, name, places)))
    if name == "demo" and "--count" not in argv:  # never the default 2,000 memories
        argv += ["--count", draw(st.sampled_from(COUNT_WORDS))]
    if draw(st.integers(0, 9)) > 0:
        target = places.folder / "demo.db" if name == "demo" else places.store
        odd = [
            places.folder,
            places.folder / "good.jsonl",
            "/dev/null",
            places.folder / "new ?#%20.db",
        ]
        argv += ["--db", str(draw(st.sampled_from([target] * 6 + odd)))]
    return argv


def test_every_command_ends_with_exit_0_1_or_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_console.embed import embedder

    loaded: dict[Any, Any] = {}
    real_load = embedder.Embedder.load.__func__  # type: ignore[attr-defined]

    def load_once(cls: Any, manifest: Any = None, threads: int = 2, **options: Any) -> Any:
        """The model loads once for all examples (each load costs half a second)."""
        if manifest not in loaded:
            loaded[manifest] = real_load(cls, manifest, threads, **options)
        return loaded[manifest]

    monkeypatch.setattr(embedder.Embedder, "load", classmethod(load_once))
    monkeypatch.chdir(tmp_path)  # relative names the fuzzer gives --out land here
    places = prepare_places(tmp_path)
    seen: dict[int, int] = {}

    @settings(FUZZ, max_examples=150)
    @given(argv=command_line(places))
    def check(argv: list[str]) -> None:
        result = invoke(argv)
        seen[result.code] = seen.get(result.code, 0) + 1
        assert result.code in (0, 1, 2), (argv, result)
        if result.code == 1:
            last = result.err.splitlines()[-1]
            assert last.startswith("memory-console: error: "), (argv, result.err)
            assert "the database failed" not in last, (argv, last)
        if result.code == 2:
            assert "error:" in result.err, (argv, result.err)

    check()
    assert seen.get(1) and seen.get(2), f"exit codes seen: {seen}"
    for path in (places.store, places.folder / "demo.db"):
        if path.exists():
            with Store(path, read_only=True) as store:
                assert store._query("PRAGMA integrity_check") == [("ok",)]


# -- store files that are not what they seem ------------------------------------------------

READS = [
    ["list"],
    ["show", "1"],
    ["stats"],
    ["search", "tea", "--mode", "keyword"],
    ["export"],
    ["runs"],
    ["decay", "--dry-run"],
]


def writes(folder: Path) -> list[list[str]]:
    memories = folder / "in.jsonl"
    memories.write_text('{"content": "Likes tea"}\n')
    return [
        ["protect", "1"],
        ["import", str(memories)],
        ["decay", "--apply"],
        ["purge", "1", "--out", str(folder / "purged.jsonl")],
        ["undo", "1"],
    ]


def refuses_untouched(path: Path, folder: Path, fragment: str) -> None:
    """Every command fails with one line naming the file and the fragment; the file's bytes
    stay as they were."""
    before = digest(path)
    for command in READS + writes(folder):
        line = one_error_line(invoke([*command, "--db", str(path)]))
        assert str(path) in line and fragment in line, (command, line)
    assert digest(path) == before


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of 300 memories, its write-ahead log checkpointed into the file."""
    path = tmp_path_factory.mktemp("real") / "real.db"
    with Store(path) as store:
        store.add_many(
            {"content": f"Memory number {n} about tea and trains " * 8} for n in range(300)
        )
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


@pytest.mark.parametrize(
    "data",
    [
        b"just some notes\n",
        b'{"content": "a JSONL file"}\n',
        b"\x89PNG\r\n\x1a\n" + b"\0" * 200,
        bytes(range(256)) * 8,
        b"SQLite format 2\x00" + b"\0" * 200,
    ],
    ids=["text", "jsonl", "png", "binary", "almost-sqlite"],
)
def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "memories.db"
    path.write_bytes(data)
    refuses_untouched(path, tmp_path, "not an SQLite database")


@pytest.mark.parametrize("cut", [16, 99, 100, 4096, 8192, 0.5, -4096])
def test_a_truncated_store_is_refused(real_store: Path, tmp_path: Path, cut: float) -> None:
    data = real_store.read_bytes()
    size = int(len(data) * cut) if isinstance(cut, float) else cut % len(data)
    path = tmp_path / "truncated.db"
    path.write_bytes(data[:size])
    refuses_untouched(path, tmp_path, "truncated SQLite file")


def foreign(path: Path, *, application_id: int = 0, tables: bool = True) -> None:
    conn = sqlite3.connect(path)
    if tables:
        conn.execute("CREATE TABLE memory (id INTEGER PRIMARY KEY, note TEXT)")
        conn.execute("INSERT INTO memory (note) VALUES ('not ours')")
    conn.execute(f"PRAGMA application_id = {application_id}")
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    ("application_id", "tables"), [(0, True), (0x12345678, False), (0x12345678, True)]
)
def test_another_applications_database_is_refused(
    tmp_path: Path, application_id: int, tables: bool
) -> None:
    path = tmp_path / "theirs.db"
    foreign(path, application_id=application_id, tables=tables)
    refuses_untouched(path, tmp_path, "another application")


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    folder = tmp_path / "folder.db"
    folder.mkdir()
    for command in READS[:2] + writes(tmp_path)[:2]:
        assert "is a directory" in one_error_line(invoke([*command, "--db", str(folder)]))


def test_a_damaged_page_is_a_one_line_error(real_store: Path, tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    data = bytearray(real_store.read_bytes())
    for offset in range(4096 * 3, len(data) - 4096, 4096):  # every page but the first three
        data[offset : offset + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))
    for command in READS + writes(tmp_path):
        result = invoke([*command, "--db", str(path)])
        assert result.code in (0, 1), (command, result)
        if result.code == 1:
            assert str(path) in one_error_line(result), (command, result.err)


# -- a full disk ----------------------------------------------------------------------------


def test_a_full_disk_is_a_clear_error_and_no_damage(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_text(
        "".join(
            json.dumps({"content": f"Memory {n}: " + "lorem ipsum " * 40}) + "\n"
            for n in range(3000)
        )
    )
    with small_disk(tmp_path / "disk") as disk:
        store = disk / "store.db"
        assert invoke(["import", str(writes(tmp_path)[1][1]), "--db", str(store)]).code == 0
        with Store(store) as opened:
            opened.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        before = digest(store)
        result = invoke(["import", str(big), "--db", str(store)])  # fills the disk midway
        assert "the disk is full; nothing was written" in one_error_line(result)
        assert count(store) == 1
        fill(disk / "filler")
        for command in (
            ["import", str(big)],
            ["protect", "1"],
            ["decay", "--apply"],
            ["export", "--out", str(disk / "out.jsonl")],
        ):
            line = one_error_line(invoke([*command, "--db", str(store)]))
            assert "the disk is full" in line, (command, line)
        for command in (["demo", "--count", "50"], ["import", str(big)]):
            line = one_error_line(invoke([*command, "--db", str(disk / "new.db")]))
            assert "the disk is full" in line, (command, line)
        line = one_error_line(invoke(["export", "--db", str(tmp_path / "none.db")]))
        assert "no such store" in line
        (disk / "filler").unlink()
        assert digest(store) == before
        leftovers = {p.name for p in disk.iterdir()} - {"store.db", "store.db-wal", "store.db-shm"}
        assert leftovers == set(), "no half-written store, export or demo is left behind"
        assert count(store) == 1
        with Store(store, read_only=True) as opened:
            assert opened._query("PRAGMA integrity_check") == [("ok",)]


def test_sqlite_full_is_refused_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLITE_FULL without a small disk: the store may not grow by a single page."""
    store = tmp_path / "store.db"
    with Store(store) as opened:
        opened.add({"content": "Already here."})
    real_connect = db.connect

    def no_room(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
        conn = real_connect(path, read_only=read_only)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    monkeypatch.setattr(db, "connect", no_room)
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps({"content": f"Memory {n} " * 50}) + "\n" for n in range(500)))
    line = one_error_line(invoke(["import", str(big), "--db", str(store)]))
    assert line == "memory-console: error: adding memories: the disk is full; nothing was written"
    monkeypatch.undo()
    assert count(store) == 1


def test_doctor_s_error_names_a_hostile_manifest_path_on_one_escaped_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A control character in --model-manifest (a record separator splits lines for
    str.splitlines) is shown escaped, as every other error line shows it."""
    code = main(["doctor", "--read-only", "--model-manifest", "\x1e"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and len(err.splitlines()) == 1
    assert "\\x1e" in err and "\x1e" not in err

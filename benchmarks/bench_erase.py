"""Erasure benchmark: erasing a 1,000-memory owner from a 20,000-memory store, against archiving.

    python -m benchmarks.bench_erase [--count 20000] [--subject 1000] [--workdir DIR] [--keep]

Builds a demo store of --count memories, imports --subject memories of one owner (each with
a unique token), recalls some of them (access events with their queries, one query shared with
another owner), then times on one copy the erasure of that owner (Store.purge of its ids, every
step: the purge file, the deletes, the text index merge, the WAL checkpoint) and on another
copy archiving the same memories (Store.archive), the baseline. Then it scans the raw bytes of
every store file for the owner's tokens.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.bench_import_memory import cpu_model
from memory_console.demo import build_demo
from memory_console.store import MemoryFilter, Store
from tests.harness.files import scan_store_files, store_files

NOW = 1_795_000_000.0
SUBJECT = "erasure-subject"
PREFIX = "zqvbench"  # every subject memory holds PREFIX + its number


def add_subject(path: Path, count: int) -> list[int]:
    with Store(path, actor="bench") as store:
        ids = store.add_many(
            [
                {
                    "owner": SUBJECT,
                    "topic": ("contacts", "user_info", "preferences")[i % 3],
                    "title": f"note {PREFIX}{i:05d}",
                    "content": f"The subject's record {PREFIX}{i:05d} kept at Zanzibarstraat {i}",
                    "keywords": f'["{PREFIX}{i:05d}", "record"]',
                    "created_at": NOW - i * 60,
                }
                for i in range(count)
            ],
            now=NOW,
        )
        for i, ident in enumerate(ids[:200]):
            query = f"record {PREFIX}{i:05d}"
            store.record_access([ident], now=NOW + i, query=query)
        # One query logged on another owner's memory too: redacted there by the erasure.
        other = int(store.ids_matching(MemoryFilter(owner="alice"))[0])
        store.record_access([other], now=NOW, query=f"record {PREFIX}00000")
    return ids


def timed(action: object) -> float:
    start = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--subject", type=int, default=1_000)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}")
    work = Path(tempfile.mkdtemp(prefix="bench-erase-", dir=args.workdir))
    try:
        base = work / "base.db"
        build_demo(base, count=args.count, seed=7, now=NOW)
        ids = add_subject(base, args.subject)
        erased, archived = work / "erased" / "memories.db", work / "archived" / "memories.db"
        for copy in (erased, archived):
            copy.parent.mkdir()
            shutil.copy(base, copy)
        with Store(archived, actor="bench") as store:
            archive_seconds = timed(lambda: store.archive(ids, now=NOW))
        with Store(erased, actor="bench") as store:
            scope_start = time.perf_counter()
            scope = store.erasure_scope(ids)
            scope_seconds = time.perf_counter() - scope_start
            out = erased.with_name("erased.jsonl")
            purge_start = time.perf_counter()
            result = store.purge(ids, out, now=NOW, selection="owner")
            purge_seconds = time.perf_counter() - purge_start
        tokens = [PREFIX, "Zanzibarstraat", SUBJECT]
        files = store_files(erased)
        scanned = sum(path.stat().st_size for path in files)
        hits = scan_store_files(erased, tokens)
        print(f"store: {args.count:,} demo memories + {len(ids):,} of {SUBJECT}")
        print(f"held before: {scope.held}")
        print(f"held after:  {result.after}")
        print(f"scope (read-only):  {scope_seconds:.3f} s")
        print(f"erasure (purge):    {purge_seconds:.3f} s  ({len(result.changed):,} memories)")
        print(f"archive (baseline): {archive_seconds:.3f} s")
        print(f"ratio erase/archive: {purge_seconds / archive_seconds:.1f}")
        print(f"wal: {result.wal or 'truncated'}")
        names = ", ".join(f"{p.name} ({p.stat().st_size:,} B)" for p in files)
        print(f"scanned {scanned:,} bytes in {names}: hits {sum(map(len, hits.values()))} {hits}")
        return 0 if not hits else 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())

"""Export benchmark: `export --history` with masking as it was (every pattern on every field)
beside masking once per distinct text, in one run, and the CLI in a fresh process.

    python benchmarks/bench_export.py [--count 20000] [--seed 7] [--workdir DIR]

Both in-process runs write the same memories and histories to memory; the old masking is the
reference the tests compare the new one with (tests/helpers.py), and both outputs must be equal.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_import_memory import cpu_model  # noqa: E402
from memory_console.demo import build_demo  # noqa: E402
from memory_console.ingest.jsonl import export_jsonl  # noqa: E402
from memory_console.sensitive import MASKED_TEXTS  # noqa: E402
from memory_console.store import MemoryFilter, Store  # noqa: E402
from memory_console.store.wire import export_record, json_line  # noqa: E402
from tests.harness.masking import reference_mask_record  # noqa: E402


def old_export(store: Store) -> tuple[float, str]:
    """Export as before: one history query per memory, every pattern on every field."""
    out = io.StringIO()
    started = time.perf_counter()
    for record in store.iter_memories(MemoryFilter()):
        out.write(json_line(reference_mask_record(export_record(record, store.history(record.id)))))
    return time.perf_counter() - started, out.getvalue()


def new_export(store: Store) -> tuple[float, str]:
    MASKED_TEXTS.clear()  # no help from an earlier run
    out = io.StringIO()
    started = time.perf_counter()
    export_jsonl(store, out, include_all=True, history=True)
    return time.perf_counter() - started, out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(dir=args.workdir, prefix="bench-export-"))
    try:
        path = workdir / "demo.db"
        build_demo(path, count=args.count, seed=args.seed)
        print(f"{cpu_model()}; {os.cpu_count()} CPUs; python {platform.python_version()}")
        with Store(path, read_only=True) as store:
            old_seconds, old_text = old_export(store)
            new_seconds, new_text = new_export(store)
        print(f"export --all --history of {args.count:,} demo memories, in process:")
        print(f"  masking every field with every pattern: {old_seconds:6.2f} s")
        print(f"  masking once per distinct text:         {new_seconds:6.2f} s")
        print(f"  same output: {old_text == new_text}")
        out = workdir / "out.jsonl"
        command = [sys.executable, "-m", "memory_console.cli", "-q", "export", "--all"]
        started = time.perf_counter()
        subprocess.run([*command, "--history", "--db", str(path), "--out", str(out)], check=True)
        print(f"  the CLI in a fresh process: {time.perf_counter() - started:.2f} s")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

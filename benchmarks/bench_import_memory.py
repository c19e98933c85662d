"""Import memory benchmark: the peak RSS of `memory-console import` on large and hostile files.

    python benchmarks/bench_import_memory.py [--lines 400000] [--workdir DIR] [--keep]

Writes, in a temporary folder (removed afterwards unless --keep): a JSONL file of --lines
realistic memories (about 200 MB at 400,000 lines), a file whose second line is 300 MB, and
a gzip bomb (a few MB expanding to 1.1 GB of one line). Each is imported by a fresh process
into a new store; the figures are that child's peak resident set size (ru_maxrss), its wall
time, its exit code and the last line it printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TOPICS = ("preferences", "user_info", "contacts", "projects", "decisions", "general")
WORDS = (
    "prefers quiet mornings and tea with oat milk; the quarterly planning review moved to "
    "Thursday; asked to be reminded about the book club; likes the Solarized theme; the staging "
    "deploy needs the new certificate; Maria leads the billing migration; plays chess online"
).split()


def cpu_model() -> str:
    """The CPU's model name and its vector extensions (a figure belongs to its machine)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    vector = sorted(f for f in flags if f.startswith(("avx", "sse4", "amx")) or "vnni" in f)
    return f"{model} ({' '.join(vector) or 'flags unknown'})"


def write_memories(path: Path, lines: int, rng: random.Random) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for number in range(1, lines + 1):
            content = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 60)))
            memory = {
                "id": number,
                "owner": f"user-{rng.randint(1, 40)}",
                "topic": rng.choice(TOPICS),
                "memory_type": rng.choice(("semantic", "episodic", "procedural")),
                "content": content,
                "keywords": rng.sample(WORDS, 5),
                "importance": round(rng.random(), 3),
                "confidence": round(rng.uniform(0.3, 1.0), 3),
                "created_at": "2026-01-01T00:00:00Z",
                "metadata": {"session": f"s-{rng.randint(1, 10**6)}", "channel": "chat"},
            }
            handle.write(json.dumps(memory) + "\n")


def write_long_line(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.write(b'{"content": "Likes tea"}\n{"content": "')
        chunk = b"a" * 2**20
        for _ in range(size // len(chunk)):
            handle.write(chunk)
        handle.write(b'"}\n')


def write_bomb(path: Path, size: int) -> None:
    chunk = b"a" * 2**20
    with gzip.GzipFile(path, "wb", compresslevel=9) as handle:
        handle.write(b'{"content": "')
        for _ in range(size // len(chunk)):
            handle.write(chunk)


def measure(source: Path, store: Path, *options: str) -> tuple[float, float, int, str]:
    """Peak RSS (MB) and wall seconds of one import in a child process, its exit code and
    the last line it printed. The child is measured through a wrapper process, so the
    figure is that import's own peak, not this script's."""
    script = (
        "import resource, subprocess, sys, time;"
        "started = time.perf_counter();"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
        "seconds = time.perf_counter() - started;"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
        "last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [''];"
        "print(peak, seconds, done.returncode, last[0][:160], sep='\\n')"
    )
    command = [sys.executable, "-m", "memory_console.cli", "import", str(source), *options]
    done = subprocess.run(
        [sys.executable, "-c", script, *command, "--db", str(store)],
        capture_output=True,
        text=True,
        check=True,
    )
    peak, seconds, code, last = done.stdout.split("\n", 3)
    return int(peak) / 1024, float(seconds), int(code), last.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=400_000, help="memories in the big JSONL")
    parser.add_argument("--workdir", help="where the files go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the files afterwards")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-import-", dir=args.workdir))
    rng = random.Random(1)
    print(
        f"{cpu_model()}; {os.cpu_count()} CPUs; python {platform.python_version()}; "
        f"load {os.getloadavg()[0]:.2f}; files in {folder}"
    )
    try:
        big = folder / "memories.jsonl"
        write_memories(big, args.lines, rng)
        long_line = folder / "long-line.jsonl"
        write_long_line(long_line, 300 * 2**20)
        bomb = folder / "bomb.jsonl.gz"
        write_bomb(bomb, 1100 * 2**20)
        cases = [
            (f"{args.lines:,}-line JSONL ({big.stat().st_size / 2**20:.0f} MB)", big, ()),
            ("a 300 MB line (line 2)", long_line, ()),
            (f"gzip bomb ({bomb.stat().st_size / 2**20:.1f} MB -> 1.1 GB)", bomb, ()),
            ("gzip bomb, --format jsonl", bomb, ("--format", "jsonl")),
        ]
        for number, (name, source, options) in enumerate(cases):
            store = folder / f"store-{number}.db"
            peak, seconds, code, last = measure(source, store, *options)
            print(f"{name}: peak RSS {peak:,.0f} MB, {seconds:.1f} s, exit {code}: {last}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(this script's own peak: {usage:,.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

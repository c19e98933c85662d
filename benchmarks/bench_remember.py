"""remember's cost per KB of message: one message of many statements, at a few sizes.

    python benchmarks/bench_remember.py [--sentences 50,100,200,400] [--keyword-only]

Each size gets a fresh store and one MemoryAPI.remember call of a message of that many
sentences, each a statement of its own about someone else (so each is one memory). Prints the
call's time, its time per KB of message, how many memories it stored, and how many bytes
the store keeps for them (content and metadata) per byte of message. A linear remember keeps
the time per KB and the bytes per byte flat as the message grows.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_console.api import MemoryAPI  # noqa: E402

NAMES = (
    "Anna Bruno Chloe Dmitri Elena Farid Greta Hugo Ines Jonas Kasia Liam Mirela Nils Olga "
    "Pavel Quentin Rosa Stefan Tamar Umberto Vera Wim Xenia Yusuf Zofia"
).split()
THINGS = (
    "kettle violin lantern bicycle telescope typewriter canoe accordion hammock compass "
    "teapot sextant banjo easel kayak gramophone loom harp"
).split()
PLACES = (
    "garden attic cellar garage studio porch workshop library greenhouse balcony barn loft"
).split()
COLOURS = "red green blue amber violet silver ochre teal crimson ivory".split()


def message_of(sentences: int, seed: int = 7) -> str:
    """A message of `sentences` statements, each about its own person and thing."""
    rng = random.Random(seed)
    said = []
    for number in range(sentences):
        name = f"{rng.choice(NAMES)} {number}"
        said.append(
            f"My neighbour {name} keeps a {rng.choice(COLOURS)} {rng.choice(THINGS)} "
            f"in the {rng.choice(PLACES)}."
        )
    return " ".join(said)


def stored_bytes(db: Path) -> tuple[int, int]:
    """(memories, bytes of their content and metadata)."""
    with sqlite3.connect(db) as conn:
        count, size = conn.execute(
            "SELECT count(*), coalesce(sum(length(content) + length(metadata)), 0) FROM memory"
        ).fetchone()
    return int(count), int(size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", default="50,100,200,400")
    parser.add_argument("--keyword-only", action="store_true", help="without the embedder")
    args = parser.parse_args()
    embedder = None
    if not args.keyword_only:
        from memory_console.embed.embedder import Embedder

        embedder = Embedder.load()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in (int(part) for part in args.sentences.split(",")):
            db = Path(folder) / f"remember-{size}.db"
            message = message_of(size)
            kilobytes = len(message.encode()) / 1024
            with MemoryAPI(
                db, owner="alice", semantic=embedder is not None, embedder=embedder
            ) as api:
                api.remember("I like tea.")  # the store and the index are ready before timing
                started = time.perf_counter()
                api.remember(message)
                seconds = time.perf_counter() - started
            count, size_bytes = stored_bytes(db)
            rows.append(
                {
                    "sentences": size,
                    "message_kb": round(kilobytes, 1),
                    "seconds": round(seconds, 3),
                    "ms_per_kb": round(seconds * 1000 / kilobytes, 1),
                    "memories": count - 1,
                    "stored_per_input_byte": round(size_bytes / len(message.encode()), 2),
                }
            )
            print(
                f"{size:5d} sentences  {kilobytes:7.1f} KB  {seconds:8.3f} s  "
                f"{seconds * 1000 / kilobytes:8.1f} ms/KB  {count - 1:5d} memories  "
                f"{size_bytes / len(message.encode()):7.2f} stored bytes per message byte",
                flush=True,
            )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()

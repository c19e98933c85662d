"""Which memory is current: the relation judgement on public labelled pairs, small talk on
public turns, and remember's cost at scale.

    python -m benchmarks.judgement [--pairs PATH] [--statements PATH] [--db PATH] [--calls N]

- Pairs (tests/data/public_pairs): each pair of statements labelled the same fact, a newer
  value or different facts. Prints the judgement's accuracy per relation, and the consolidate
  pass's precision and recall of "merge" (the same fact) with the real embedder at its
  default min_cosine, beside the pass's cosine-only rule (no text veto) as the baseline;
  development and set-aside splits apart.
- Statements (tests/data/public_statements): small talk precision and recall, the facts
  taken for small talk, and the pointing-back sentences kept with the one before.
- remember at scale (--db, a store of 100,000 memories, copied first so it is not changed):
  the p50 and p95 of remember() for one-sentence messages, beside the query embedding alone
  (the floor every remember pays) measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.bench_import_memory import cpu_model
from memory_console.agent.rules.chatter import is_chatter
from memory_console.agent.rules.relation import relate
from memory_console.agent.rules.statements import split_statements

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
PAIRS = DATA / "public_pairs" / "pairs.jsonl"
STATEMENTS = DATA / "public_statements" / "statements.jsonl"
MESSAGES = (
    "My sister Hana moved to Rotterdam last spring.",
    "I switched from Vim to Helix for editing.",
    "Actually, I meant I like apples.",
    "The quarterly review moved to Thursday at 3pm.",
    "I've started learning the cello.",
    "Thanks!",
    "My favourite colour is teal now.",
    "Our team adopted Postgres 16 this week.",
)


def load(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def pairs_report(path: Path) -> None:
    rows = load(path)
    print(f"pairs: {len(rows)} from {path.name}")
    for split in ("dev", "held"):
        part = [r for r in rows if r["split"] == split]
        print(f"split {split}: {len(part)} pairs")
        right: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for row in part:
            judged = relate(str(row["a"]), str(row["b"]))
            total[str(row["relation"])] += 1
            right[str(row["relation"])] += judged.kind == row["relation"]
        for relation in sorted(total):
            print(f"  judged {relation:<10} {right[relation]:>4}/{total[relation]:<4}")
        merge_report(part)


def merge_report(rows: list[dict[str, object]]) -> None:
    """The consolidate pass on the pairs, each pair two memories of an owner of its own."""
    from memory_console.embed.search import SearchEngine
    from memory_console.maintenance.passes.consolidate import ConsolidateParams
    from memory_console.store import Store
    from tests.harness.pairs import add_pairs, merged_pairs, precision_recall

    pairs = [{"a": r["a"], "b": r["b"], "merge": r["relation"] == "same"} for r in rows]
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "pairs.db") as store:
        add_pairs(store, pairs)
        SearchEngine(store).prepare_semantic()
        default = ConsolidateParams().min_cosine
        precision, recall = precision_recall(pairs, merged_pairs(store))
        print(
            f"  consolidate (min_cosine {default}): precision {precision:.3f} recall {recall:.3f}"
        )
        from memory_console.maintenance.passes import consolidate

        vetoed = consolidate.vetoed
        consolidate.vetoed = lambda one, other: False  # the baseline: cosine alone
        try:
            base_p, base_r = precision_recall(pairs, merged_pairs(store))
        finally:
            consolidate.vetoed = vetoed
        print(f"  baseline, cosine alone:    precision {base_p:.3f} recall {base_r:.3f}")


def statements_report(path: Path) -> None:
    rows = load(path)
    print(f"statements: {len(rows)} from {path.name}")
    for split in ("dev", "held"):
        part = [r for r in rows if r["split"] == split]
        said = {
            str(r["text"]): all(is_chatter(s) for s in split_statements(str(r["text"])))
            for r in part
        }
        chatter = [r for r in part if r["label"] == "chatter"]
        facts = [r for r in part if r["label"] == "fact"]
        hit = sum(said[str(r["text"])] for r in chatter)
        dropped = sum(said[str(r["text"])] for r in facts)
        taken = hit + dropped
        pointing = [
            r for r in part if r["label"] == "refers" and r.get("prev_speaker") != "assistant"
        ]
        kept = sum(len(split_statements(f"{r['prev']} {r['text']}")) == 1 for r in pointing)
        print(
            f"  {split:<5} small talk precision {hit / taken if taken else 1.0:.3f} recall "
            f"{hit / len(chatter):.3f}; facts taken for small talk {dropped}/{len(facts)}; "
            f"pointing back kept with the one before {kept}/{len(pointing)}"
        )


def remember_report(db: Path, calls: int) -> None:
    from memory_console.api import MemoryAPI
    from memory_console.embed.embedder import Embedder

    embedder = Embedder.load()
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / db.name
        for file in db.parent.glob(f"{db.name}*"):
            shutil.copy(file, Path(folder) / file.name)
        with MemoryAPI(copy, owner="bench-user", embedder=embedder) as api:
            count = api.store.count()
            api.remember("I keep a sourdough starter in the fridge.")  # loads the index
            semantic = api.engine.semantic
            vectors = len(semantic.index) if semantic is not None else 0
            print(f"store of {count:,} memories, {vectors:,} vectors in the semantic index")
            took, floor = [], []
            for number in range(calls):
                message = f"{MESSAGES[number % len(MESSAGES)]}"
                started = time.perf_counter()
                api.remember(message)
                took.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                embedder.embed_query(message)
                floor.append((time.perf_counter() - started) * 1000)
    p50 = statistics.median(took)
    p95 = sorted(took)[int(0.95 * (len(took) - 1))]
    base = statistics.median(floor)
    print(
        f"remember, one sentence, at {count:,} memories: p50 {p50:.1f} ms, p95 {p95:.1f} ms; "
        f"query embedding alone p50 {base:.1f} ms ({p50 / base:.1f}x); target p50 <= 30 ms"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--statements", type=Path, default=STATEMENTS)
    parser.add_argument("--db", type=Path, help="a store of 100,000 memories for remember's cost")
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"CPU: {cpu_model()}")
    if args.pairs.exists():
        pairs_report(args.pairs)
    if args.statements.exists():
        statements_report(args.statements)
    if args.db is not None:
        remember_report(args.db, args.calls)


if __name__ == "__main__":
    main()

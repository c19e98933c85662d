"""Maintenance benchmark: relevance decay dry run and apply on a demo store, against a naive
per-row SQLModel loop and a raw sqlite3 pass that produces the same list of changes.

    python benchmarks/bench_maintenance.py [--count 1000000] [--compare-count 500000]
        [--orm-count 100000] [--workdir DIR]

Demo stores are built in --workdir (a temporary folder by default) and reused when they are
already there; each figure is printed with its wall and CPU seconds. The machine's load is
printed too: on a shared machine the wall times move with it.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_console.demo import build_demo
from memory_console.maintenance import apply, plan, undo
from memory_console.maintenance.report import plan_json_chunks
from memory_console.store import Store, bulk
from memory_console.timeutil import to_iso

NOW = 1_795_000_000.0
RAW_CHANGES = f"""
WITH scoped AS (
  SELECT id, confidence, base_confidence, last_accessed_at,
         CASE WHEN decay_policy = 'aggressive'
              THEN 0.90 + 0.08 * min(1.0, retrieval_count / 10.0)
              ELSE 0.95 + 0.04 * min(1.0, retrieval_count / 10.0) END AS rate,
         CAST(floor(max(:now - coalesce(last_accessed_at, created_at), 0.0) / 86400.0 / 30.0)
              AS INTEGER) AS periods
  FROM memory NOT INDEXED WHERE {bulk.SCOPES["decaying"]}
), decayed AS (
  SELECT *, min(base_confidence, max(0.10, base_confidence * pow(rate, periods))) AS after
  FROM scoped WHERE periods >= 1
)
SELECT id, confidence, after,
       printf('%d period%s since %s at rate %.3f', periods,
              CASE WHEN periods = 1 THEN '' ELSE 's' END,
              CASE WHEN last_accessed_at IS NULL THEN 'creation' ELSE 'last access' END, rate)
FROM decayed WHERE after < confidence ORDER BY id
"""


class Clock:
    """Wall and CPU seconds of one step."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def stop(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def show(label: str, seconds: tuple[float, float], extra: str = "") -> None:
    wall, cpu = seconds
    print(f"{label:<44} {wall:7.2f} s wall {cpu:7.2f} s cpu  {extra}", flush=True)


def demo_store(folder: Path, count: int) -> Path:
    path = folder / f"demo-{count}.db"
    if not path.exists():
        clock = Clock()
        report = build_demo(path, count=count, seed=7, now=NOW)
        show(f"build demo store of {count:,}", clock.stop(), f"{report.events:,} events")
    return path


def working_copy(path: Path, name: str) -> Path:
    copy = path.with_name(name)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{copy}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(path, copy)
    return copy


def timed(action: Callable[[], Any]) -> tuple[Any, tuple[float, float]]:
    clock = Clock()
    result = action()
    return result, clock.stop()


def bench_main_store(path: Path) -> dict[str, float]:
    """Dry run, JSON, apply, a second dry run and undo on the big store (per memory figures)."""
    store = Store(path, actor="bench")
    proposal, dry = timed(lambda: plan(store, now=NOW))
    figures = proposal.summary()
    show(
        "relevance dry run (plan)",
        dry,
        f"eligible {figures['eligible']:,}, decayed {figures['decayed']:,}",
    )
    size, as_json = timed(lambda: sum(len(part) for part in plan_json_chunks(proposal)))
    show("  its JSON (complete changes list)", as_json, f"{size / 1e6:.0f} MB")
    run, applied = timed(lambda: apply(store, proposal))
    events = store._query("SELECT count(*) FROM memory_event WHERE run_id = ?", (run.id,))[0][0]
    show(
        "relevance apply (changes, events, run row)",
        applied,
        f"{run.changed:,} memories, {events:,} events, run {run.id}",
    )
    again, second = timed(lambda: plan(store, now=NOW))
    show("dry run again at the same now", second, f"decayed {again.summary()['decayed']:,}")
    report, undone = timed(lambda: undo(store, run.id, now=NOW))
    show("undo of that run", undone, f"restored {len(report.restored):,}")
    memories = store._query("SELECT count(*) FROM memory")[0][0]
    store.close()
    return {
        "dry": dry[0],
        "apply": applied[0],
        "memories": memories,
        "changed": max(run.changed, 1),
    }


def orm_decay(path: Path, limit: int) -> tuple[int, int, tuple[float, float], tuple[float, float]]:
    """The naive way: the first `limit` memories as SQLModel objects, each checked and
    decayed in Python, the changed ones saved (one commit)."""
    clock = Clock()
    from sqlmodel import Session, col, create_engine, select

    from memory_console.store.tables import Memory

    engine = create_engine(f"sqlite:///{path}")
    changed = 0
    with Session(engine) as session:
        memories = session.exec(select(Memory).order_by(col(Memory.id)).limit(limit)).all()
        for memory in memories:
            if (
                memory.status != "active"
                or memory.is_protected
                or memory.decay_policy not in ("standard", "aggressive")
                or memory.memory_type == "semantic"
            ):
                continue
            resistance = min(1.0, memory.retrieval_count / 10)
            if memory.decay_policy == "aggressive":
                rate = 0.90 + 0.08 * resistance
            else:
                rate = 0.95 + 0.04 * resistance
            anchor = memory.last_accessed_at or memory.created_at
            periods = math.floor(max(NOW - anchor, 0.0) / 86400 / 30)
            if periods < 1:
                continue
            new = min(memory.base_confidence, max(0.10, memory.base_confidence * rate**periods))
            if new < memory.confidence:
                memory.confidence = new
                memory.revision += 1
                session.add(memory)
                changed += 1
        computed = clock.stop()
        session.commit()
    engine.dispose()
    return len(memories), changed, computed, clock.stop()


def raw_changes(path: Path) -> list[tuple[int, float, float, str]]:
    import sqlite3

    conn = sqlite3.connect(path)
    rows = conn.execute(RAW_CHANGES, {"now": NOW}).fetchall()
    conn.close()
    return rows


def raw_json(rows: list[tuple[int, float, float, str]]) -> int:
    """The same JSON rows the CLI writes, from the raw pass's list."""
    import json

    texts: dict[str, str] = {}
    size = 0
    for ident, before, after, reason in rows:
        text = texts.get(reason) or texts.setdefault(reason, json.dumps(reason))
        size += len(
            f'{{"id": {ident}, "field": "confidence", "before": {before!r}, '
            f'"after": {after!r}, "reason": {text}, "pass": "decay", '
            f'"kind": "decayed"}}'
        )
    return size


def bench_against_raw(path: Path) -> None:
    store = Store(path, actor="bench")

    def ours() -> Any:
        proposal = plan(store, now=NOW)
        return proposal, sum(len(part) for part in plan_json_chunks(proposal))

    (proposal, _), mine = timed(ours)
    store.close()
    show("decay dry run + JSON (memory-console)", mine)
    rows, raw = timed(lambda: raw_changes(path))
    _, raw_text = timed(lambda: raw_json(rows))
    raw_total = (raw[0] + raw_text[0], raw[1] + raw_text[1])
    show("same list by a raw sqlite3 pass + JSON", raw_total, f"{len(rows):,} changes")
    listed = [c for c in proposal.changes()]
    same_ids = [c.id for c in listed] == [r[0] for r in rows]
    exact = sum(c.after == r[2] for c, r in zip(listed, rows, strict=False))
    worst = max((abs(c.after - r[2]) for c, r in zip(listed, rows, strict=False)), default=0.0)
    reasons = sum(c.reason == r[3] for c, r in zip(listed, rows, strict=False))
    print(
        f"  same ids: {same_ids}; equal values {exact:,}/{len(rows):,} (largest difference "
        f"{worst:.1e}); equal reasons {reasons:,}"
    )
    print(f"  memory-console / raw sqlite3: {mine[0] / raw_total[0]:.2f} (wall)")
    command = [
        sys.executable,
        "-m",
        "memory_console.cli",
        "decay",
        "--db",
        str(path),
        "--dry-run",
        "--json",
        "--now",
        to_iso(NOW) or "",
    ]
    clock = Clock()
    with open(os.devnull, "w") as sink:
        subprocess.run(command, stdout=sink, check=True)
    wall, _ = clock.stop()
    print(f"{'CLI decay --dry-run --json > /dev/null':<44} {wall:7.2f} s wall (whole process)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--compare-count", type=int, default=500_000)
    parser.add_argument("--orm-count", type=int, default=100_000)
    parser.add_argument("--workdir", help="where demo stores are built and kept")
    args = parser.parse_args()
    folder = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-mnt-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    big = demo_store(folder, args.count)
    print(f"-- {args.count:,} memories", flush=True)
    ours = bench_main_store(working_copy(big, "work.db"))
    print(f"-- naive SQLModel loop over the first {args.orm_count:,} memories", flush=True)
    loaded, changed, computed, total = orm_decay(working_copy(big, "orm.db"), args.orm_count)
    show("load + compute (dry run equivalent)", computed, f"{loaded:,} memories")
    show("load + compute + save (apply equivalent)", total, f"{changed:,} saved")
    # Per memory of the store each approach covers: ours the whole store, the loop its part.
    per = ours["memories"]
    loop, loop_read = total[0] / loaded, computed[0] / loaded
    print(f"per memory of the store (the loop: load + compute + save {loop * 1e6:.2f} us):")
    for label, seconds in (
        ("dry run", ours["dry"]),
        ("apply", ours["apply"]),
        ("plan + apply", ours["dry"] + ours["apply"]),
    ):
        print(
            f"  {label:<13} {seconds / per * 1e6:7.2f} us -> {loop / (seconds / per):5.1f}x faster"
        )
    print(
        f"  dry run against the loop's load + compute alone ({loop_read * 1e6:.2f} us): "
        f"{loop_read / (ours['dry'] / per):.1f}x faster"
    )
    print(
        f"  per changed memory: apply {ours['apply'] / ours['changed'] * 1e6:.1f} us, "
        f"loop {total[0] / max(changed, 1) * 1e6:.1f} us"
    )
    print(f"-- {args.compare_count:,} memories: memory-console against raw sqlite3", flush=True)
    bench_against_raw(demo_store(folder, args.compare_count))
    for name in ("work.db", "orm.db"):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{folder / name}{suffix}").unlink(missing_ok=True)
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""The forget threshold: how well a cosine picks the memory a forget phrase means.

    python benchmarks/forget_threshold.py

Loads the labelled set tests/data/forget_phrases.jsonl (one owner's memories and forget
phrases, each labelled with the memories it means; none for a phrase about something not
stored) and the real embedder; prints the CPU, the cosine of every (phrase, memory) pair
split by label, then precision and recall of archiving at each candidate threshold under the
rule forget() uses (the best memory, at or above the threshold and a margin ahead of the
next), and the threshold it recommends: precision 1.0 first (a wrong archive is worse than a
missed one), then the best recall, then the middle of the thresholds that reach both. It also
scores the keyword rule used without the embedder (exactly one memory holds every content word).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.bench_import_memory import cpu_model
from memory_console.agent.rules.describe import extract_keywords, make_title
from memory_console.agent.rules.requests import (
    FORGET_MARGIN,
    content_words,
    forget_subject,
    holds_every_word,
    ruled_out,
    strong_match,
)
from memory_console.embed.embedder import Embedder, embedding_text

LABELLED = Path(__file__).resolve().parent.parent / "tests" / "data" / "forget_phrases.jsonl"
THRESHOLDS = np.round(np.arange(0.30, 0.801, 0.01), 2)
MARGINS = (0.0, 0.02, 0.05, 0.08, 0.10)
SAFETY = 0.02  # precision must hold this far below the recommended threshold too


@dataclass(frozen=True)
class Labelled:
    """The labelled set: memory keys and texts, phrases and the keys each means."""

    keys: list[str]
    contents: list[str]
    phrases: list[str]
    means: list[set[str]]


def load(path: Path = LABELLED) -> Labelled:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    memories = [row for row in rows if "memory" in row]
    phrases = [row for row in rows if "phrase" in row]
    return Labelled(
        [m["memory"] for m in memories],
        [m["content"] for m in memories],
        [p["phrase"] for p in phrases],
        [set(p["means"]) for p in phrases],
    )


def cosines(embedder: Embedder, data: Labelled) -> np.ndarray:
    """[phrase, memory] cosines: memories embedded as the vector index embeds them, phrases as
    forget() embeds them (the subject, request words off)."""
    memories = embedder.embed(
        [embedding_text(make_title(c), c, extract_keywords(c)) for c in data.contents]
    )
    subjects = [forget_subject(phrase) or phrase for phrase in data.phrases]
    return np.stack([embedder.embed_query(subject) for subject in subjects]) @ memories.T


def score(
    data: Labelled, chosen: list[set[str]]
) -> tuple[float, float, int, list[tuple[str, str]]]:
    """(precision, recall, archives, wrong (phrase, memory) pairs) of what each phrase archives."""
    archived = sum(len(c) for c in chosen)
    right = sum(len(c & m) for c, m in zip(chosen, data.means, strict=True))
    wanted = sum(len(m) for m in data.means)
    wrong = [
        (phrase, key)
        for phrase, c, m in zip(data.phrases, chosen, data.means, strict=True)
        for key in sorted(c - m)
    ]
    return (right / archived if archived else 1.0), right / wanted, archived, wrong


def semantic_choice(
    data: Labelled, table: np.ndarray, threshold: float, margin: float, judged: bool = False
):
    """What forget() archives at `threshold` and `margin`; judged=True leaves out, as forget()
    does, the memories the relation judgement rules out (requests.ruled_out)."""
    chosen = []
    for number, row in enumerate(table):
        scored = list(enumerate(row.tolist()))
        if judged:
            subject = forget_subject(data.phrases[number]) or data.phrases[number]
            scored = [(j, c) for j, c in scored if not ruled_out(subject, data.contents[j])]
        best = strong_match(scored, threshold, margin)
        chosen.append(set() if best is None else {data.keys[best]})
    return score(data, chosen)


def keyword_choice(data: Labelled):
    chosen = []
    for phrase in data.phrases:
        words = content_words(forget_subject(phrase) or phrase)
        holding = [
            k for k, c in zip(data.keys, data.contents, strict=True) if holds_every_word(words, c)
        ]
        chosen.append(set(holding) if len(holding) == 1 else set())
    return score(data, chosen)


def recommend(data: Labelled, table: np.ndarray) -> tuple[float, float, float]:
    """(threshold, margin, recall): precision 1.0 at the threshold and SAFETY below it (so the
    default is not at the edge of a wrong archive), then the best recall, then the largest
    margin, then the middle of the thresholds that reach it."""
    best: tuple[float, float, list[float]] | None = None
    for margin in MARGINS:
        results = {float(t): semantic_choice(data, table, t, margin) for t in THRESHOLDS}
        exact = {t: r[0] == 1.0 for t, r in results.items()}
        safe = [
            (t, r[1])
            for t, r in results.items()
            if exact[t] and exact.get(round(t - SAFETY, 2), False)
        ]
        if not safe:
            continue
        top = max(recall for _, recall in safe)
        at_top = [float(t) for t, recall in safe if recall == top]
        if best is None or top >= best[0] - 1e-9:  # equal recall: the larger margin is safer
            best = (top, margin, at_top)
    assert best is not None
    recall, margin, at_top = best
    return round(at_top[len(at_top) // 2], 2), margin, recall


def main() -> int:
    print(
        f"{cpu_model()}; {os.cpu_count()} CPUs; python {platform.python_version()}; "
        f"{platform.system()} {platform.release()}"
    )
    data = load()
    embedder = Embedder.load()
    table = cosines(embedder, data)
    print(
        f"{len(data.contents)} memories, {len(data.phrases)} phrases "
        f"({sum(1 for m in data.means if not m)} about nothing stored); {embedder.model_id}"
    )
    print("\ncosine of every (phrase, memory) pair, by label")
    for index, phrase in enumerate(data.phrases):
        order = np.argsort(-table[index])
        meant = (
            ", ".join(
                f"{data.keys[j]} {table[index, j]:.3f}"
                for j in order
                if data.keys[j] in data.means[index]
            )
            or "-"
        )
        others = ", ".join(
            f"{data.keys[j]} {table[index, j]:.3f}"
            for j in order[:3]
            if data.keys[j] not in data.means[index]
        )
        print(f"  {phrase[:48]:48s} means: {meant:28s} best others: {others}")
    meant_mask = np.array([[k in m for k in data.keys] for m in data.means])
    positive, negative = table[meant_mask], table[~meant_mask]
    print(
        f"\nmeant pairs     n={positive.size:4d}  min {positive.min():.3f}  "
        f"median {np.median(positive):.3f}  max {positive.max():.3f}"
    )
    print(
        f"not meant pairs n={negative.size:4d}  min {negative.min():.3f}  "
        f"median {np.median(negative):.3f}  max {negative.max():.3f}"
    )
    print("\nthreshold  " + "  ".join(f"margin {m:.2f} P/R   " for m in MARGINS))
    for threshold in THRESHOLDS[::2]:
        cells = []
        for margin in MARGINS:
            precision, recall, _, _ = semantic_choice(data, table, threshold, margin)
            cells.append(f"{precision:.2f}/{recall:.2f}       ")
        print(f"  {threshold:.2f}     " + "  ".join(cells))
    threshold, margin, recall = recommend(data, table)
    print(
        f"\nrecommended: forget_threshold {threshold:.2f} with margin {margin:.2f} "
        f"(precision 1.00, recall {recall:.2f}); forget() uses margin {FORGET_MARGIN:.2f}"
    )
    for t in (threshold - 0.05, threshold + 0.05):
        precision, recall_at, archived, wrong = semantic_choice(data, table, t, margin)
        print(
            f"  at {t:.2f}: precision {precision:.2f}, recall {recall_at:.2f}"
            + (f"; wrong: {wrong}" if wrong else "")
        )
    from memory_console.store.settings import FORGET_THRESHOLD

    for at in (FORGET_THRESHOLD, round(FORGET_THRESHOLD - 0.06, 2)):
        for judged in (False, True):
            precision, recall_at, _, wrong = semantic_choice(data, table, at, FORGET_MARGIN, judged)
            how = "with the relation judgement" if judged else "cosine alone"
            print(
                f"forget() at {at} margin {FORGET_MARGIN}, {how}: precision "
                f"{precision:.2f}, recall {recall_at:.2f}" + (f"; wrong: {wrong}" if wrong else "")
            )
    precision, recall, archived, wrong = keyword_choice(data)
    print(
        f"keyword rule (no embedder): precision {precision:.2f}, recall {recall:.2f}, "
        f"{archived} archives" + (f"; wrong: {wrong}" if wrong else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Search and recall on LoCoMo, conversations nobody here wrote: recall@5 and recall@10 per
question category for keyword, semantic, hybrid, the agent's recall and a plain BM25 baseline,
on the development half and on the held-out half apart.

    python -m benchmarks.search_locomo PATH/TO/locomo10.json [--db PATH] [--half dev|held-out]

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
ACL 2024; github.com/snap-research/LoCoMo, data/locomo10.json) holds 10 long conversations
between two people, with questions whose evidence turns are annotated. Its licence (CC BY-NC
4.0) keeps it out of this repository: fetch it and give its path.

Every turn becomes one memory of its conversation (owner = the conversation's id, content =
"Speaker: text", created at its session's date), and each question (categories 1 to 4; the
adversarial category 5 asks about things never said) is searched within its owner. A
question's recall@k is the share of its evidence turns in the top k.

The development half (conv-26, -30, -41, -42, -43) is what parameters may be tuned on; the
held-out half (conv-44, -47, -48, -49, -50) is only reported.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memory_console.agent.api import MemoryAPI
from memory_console.embed.search import SearchEngine
from memory_console.store import MemoryFilter, Store
from tests.harness.search_quality import cpu

DEVELOPMENT = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
HELD_OUT = ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
PATHS = ("bm25", "keyword", "semantic", "hybrid", "recall")
KS = (5, 10)
DIA_ID = re.compile(r"D\d+:\d+")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    content: str
    at: float


@dataclass(frozen=True)
class Question:
    owner: str
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    owner: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    last: float  # the start of its last session


def session_time(text: str) -> float:
    """ "1:56 pm on 8 May, 2023" as a UTC timestamp."""
    moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return moment.replace(tzinfo=UTC).timestamp()


def load(path: Path) -> list[Conversation]:
    conversations = []
    for sample in json.loads(path.read_text()):
        owner, talk = sample["sample_id"], sample["conversation"]
        turns: list[Turn] = []
        number = 1
        while f"session_{number}" in talk:
            at = session_time(talk[f"session_{number}_date_time"])
            for turn in talk[f"session_{number}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                turns.append(Turn(turn["dia_id"], f"{turn['speaker']}: {text}", at))
            number += 1
        known = {turn.dia_id for turn in turns}
        questions = []
        for row in sample["qa"]:
            evidence = frozenset(
                found
                for entry in row.get("evidence", [])
                for found in DIA_ID.findall(str(entry))
                if found in known
            )
            if row.get("category") in CATEGORIES and evidence:
                questions.append(Question(owner, row["question"], row["category"], evidence))
        last = max(turn.at for turn in turns)
        conversations.append(Conversation(owner, tuple(turns), tuple(questions), last))
    return conversations


def build_store(path: Path, conversations: Sequence[Conversation]) -> None:
    """One memory per turn (external id = owner/dia_id), embedded with the real model."""
    with Store(path, actor="locomo") as store:
        for conversation in conversations:
            by_time: dict[float, list[Turn]] = defaultdict(list)
            for turn in conversation.turns:
                by_time[turn.at].append(turn)
            for at, turns in by_time.items():
                store.add_many(
                    [
                        {
                            "owner": conversation.owner,
                            "content": turn.content,
                            "external_id": f"{conversation.owner}/{turn.dia_id}",
                            "source": "import",
                        }
                        for turn in turns
                    ],
                    now=at,
                )
        SearchEngine(store).prepare_semantic()


# -- a plain Okapi BM25, the baseline every path must beat ---------------------------------

TOKEN = re.compile(r"[a-z0-9]+")


class OkapiBM25:
    """Okapi BM25 (k1 1.2, b 0.75) over lower-cased words: no stemming, no stop words."""

    def __init__(self, documents: dict[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.terms = {key: Counter(TOKEN.findall(text.lower())) for key, text in documents.items()}
        self.length = {key: sum(terms.values()) for key, terms in self.terms.items()}
        self.average = sum(self.length.values()) / max(1, len(self.length))
        frequency: Counter[str] = Counter()
        for terms in self.terms.values():
            frequency.update(terms.keys())
        count = len(self.terms)
        self.idf = {
            word: math.log(1 + (count - seen + 0.5) / (seen + 0.5))
            for word, seen in frequency.items()
        }

    def top(self, query: str, k: int) -> list[str]:
        words = set(TOKEN.findall(query.lower()))
        scores: dict[str, float] = {}
        for key, terms in self.terms.items():
            norm = self.k1 * (1 - self.b + self.b * self.length[key] / self.average)
            score = sum(
                self.idf[w] * terms[w] * (self.k1 + 1) / (terms[w] + norm)
                for w in words
                if w in terms
            )
            if score > 0:
                scores[key] = score
        return sorted(scores, key=lambda key: (-scores[key], key))[:k]


# -- the paths measured ------------------------------------------------------------------------

Ranker = Callable[[Question], list[str]]


def rankers(store: Store, conversations: Sequence[Conversation], k: int) -> dict[str, Ranker]:
    """Each path as question -> dia ids, best first."""
    found = store.ids_by_external_id(
        [f"{c.owner}/{turn.dia_id}" for c in conversations for turn in c.turns]
    )
    dia = {ident: external.split("/", 1)[1] for external, ident in found.items()}
    engine = SearchEngine(store)
    engine.prepare_semantic()
    api = MemoryAPI(store)
    last = {conversation.owner: conversation.last for conversation in conversations}
    bm25 = {
        conversation.owner: OkapiBM25({turn.dia_id: turn.content for turn in conversation.turns})
        for conversation in conversations
    }

    def search(mode: str) -> Ranker:
        def ranked(question: Question) -> list[str]:
            hits = engine.search(
                question.text,
                mode=mode,
                k=k,
                memory_filter=MemoryFilter(owner=question.owner, status="active"),
                now=last[question.owner] + 86_400,
            )
            return [dia[hit.record.id] for hit in hits]

        return ranked

    def recall(question: Question) -> list[str]:
        found = api.rank(question.text, question.owner, k, now=last[question.owner] + 86_400)
        return [dia[ident] for ident in found]

    return {
        "bm25": lambda question: bm25[question.owner].top(question.text, k),
        "keyword": search("keyword"),
        "semantic": search("semantic"),
        "hybrid": search("hybrid"),
        "recall": recall,
    }


def measure(
    paths: dict[str, Ranker], questions: Sequence[Question]
) -> tuple[dict[tuple[str, int, int], float], dict[str, list[float]]]:
    """(path, category or 0 for all, k) -> mean recall@k; and each path's latencies (s)."""
    sums: dict[tuple[str, int, int], float] = defaultdict(float)
    counts: Counter[int] = Counter(q.category for q in questions)
    counts[0] = len(questions)
    latencies: dict[str, list[float]] = defaultdict(list)
    for question in questions:
        for name, ranker in paths.items():
            started = time.perf_counter()
            found = ranker(question)
            latencies[name].append(time.perf_counter() - started)
            for k in KS:
                share = len(question.evidence & set(found[:k])) / len(question.evidence)
                sums[(name, question.category, k)] += share
                sums[(name, 0, k)] += share
    return {key: total / counts[key[1]] for key, total in sums.items()}, latencies


def table(title: str, figures: dict[tuple[str, int, int], float], questions: int) -> str:
    lines = [
        f"{title} ({questions} questions)",
        f"{'category':<12}" + "".join(f"{path + '@' + str(k):>13}" for path in PATHS for k in KS),
    ]
    for category, name in [*CATEGORIES.items(), (0, "all")]:
        lines.append(
            f"{name:<12}"
            + "".join(f"{figures[(path, category, k)]:13.3f}" for path in PATHS for k in KS)
        )
    return "\n".join(lines)


def targets(figures: dict[tuple[str, int, int], float]) -> str:
    """The held-out half's targets at recall@10, each met or missed."""
    hybrid, recall = figures[("hybrid", 0, 10)], figures[("recall", 0, 10)]
    halves = max(figures[("keyword", 0, 10)], figures[("semantic", 0, 10)])
    checks = [
        (f"hybrid {hybrid:.3f} >= 0.70", hybrid >= 0.70),
        (f"hybrid {hybrid:.3f} >= best half {halves:.3f} + 0.03", hybrid >= halves + 0.03),
        (f"recall {recall:.3f} >= hybrid - 0.03", recall >= hybrid - 0.03),
    ]
    checks += [
        (f"{name}: hybrid >= best half", figures[("hybrid", c, 10)] >= max(
            figures[("keyword", c, 10)], figures[("semantic", c, 10)]
        ))
        for c, name in CATEGORIES.items()
    ]  # fmt: skip
    return "targets: " + "; ".join(f"{text} {'met' if ok else 'MISSED'}" for text, ok in checks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo", type=Path, help="LoCoMo's data/locomo10.json")
    parser.add_argument("--db", type=Path, help="a store built by this script (default: build one)")
    parser.add_argument("--half", choices=("dev", "held-out", "both"), default="both")
    args = parser.parse_args()
    conversations = load(args.locomo)
    path = args.db or Path(tempfile.mkdtemp(prefix="locomo-")) / "locomo.db"
    if not path.exists():
        started = time.perf_counter()
        build_store(path, conversations)
        print(f"built {path} in {time.perf_counter() - started:.1f} s")
    print(f"cpu: {cpu()}")
    halves = {"dev": DEVELOPMENT, "held-out": HELD_OUT}
    chosen = halves if args.half == "both" else {args.half: halves[args.half]}
    with Store(path, actor="locomo") as store:
        paths = rankers(store, conversations, max(KS))
        for half, owners in chosen.items():
            questions = [q for c in conversations if c.owner in owners for q in c.questions]
            figures, latencies = measure(paths, questions)
            print(table(f"{half} half: recall@k", figures, len(questions)))
            if half == "held-out":
                print(targets(figures))
            print(
                "p50 ms: "
                + ", ".join(
                    f"{name} {statistics.median(times) * 1000:.1f}"
                    for name, times in latencies.items()
                )
            )


if __name__ == "__main__":
    main()

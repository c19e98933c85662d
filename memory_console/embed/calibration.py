"""Which embedder graph and index scan give the model's answers fastest on this machine:
checked and measured once, then kept.

Which kernel is fastest depends on the CPU, and so, for some kernels, is what they compute:
onnxruntime's 8-bit products saturate without VNNI, and their one activation scale per batch
moves a text's vector with its batch. A model id must name one set of vectors on every CPU,
so no kernel is trusted for what it computed elsewhere. At the first embedder load on a
machine every candidate embeds the calibration texts, in batches and one by one, and is
compared with the reference computed here (the model file run plainly in onnxruntime):
one whose cosines differ from the reference's, or from its own one-by-one vectors, by more
than TOLERANCE, or that moves a decision at any of the code's cosine thresholds, is refused.
The fastest of the others is kept, with every candidate's figures and refusals, in
calibration.json in the user's cache directory. The record is keyed by what the figures depend
on (CPU model and vector extensions, onnxruntime, numpy and tokenizers versions, the model
file's sha256, the candidates); a different key is checked and measured again.

The index's 8-bit code scan is offered only where its integer products equal numpy's exactly
on codes that stress every kernel's intermediate sums (int8scan.scan_is_exact()).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from memory_console.embed import model_cache

CALIBRATE_ENV = "MEMORY_CONSOLE_CALIBRATE"  # "0": measure nothing, take the defaults
FILE_NAME = "calibration.json"
FORMAT = 2
# Largest difference allowed between two candidates' cosines (of each text with every other,
# and of each text's two vectors), and between a text's vector alone and in a batch, for a
# candidate to give the model's vectors. The float32 graphs measure 4e-7 apart on 300 texts
# and 1e-6 across CPUs; the int8 graph 3e-2 to 6e-2 from them.
TOLERANCE = 1e-4
# The CPU flags kernels are chosen by: 256- and 512-bit vectors, 8-bit dot products (x86's
# VNNI, ARM's asimddp), AMX.
RELEVANT_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile", "amx_int8", "asimddp")
# numpy's names for the flags its run-time CPU check knows.
_NUMPY_NAMES = {
    "avx2": "AVX2",
    "avx512f": "AVX512F",
    "avx512_vnni": "AVX512VNNI",
    "avx_vnni": "AVXVNNI",
    "asimddp": "ASIMDDP",
}
LIBRARIES = ("onnxruntime", "numpy", "tokenizers")
INDEX_FLOAT32 = "float32"
INDEX_INT8 = "int8 codes"
# The index is timed at this many rows, the size from which the 8-bit scan is offered.
INDEX_ROWS = 32_768
NEVER = 1 << 62
_ROUNDS = 3
log = logging.getLogger(__name__)

# Calibration texts: memory-like sentences of the lengths agents store (10 to 40 words).
_SUBJECTS = (
    "The user",
    "Alice",
    "The team lead",
    "Our customer in Lyon",
    "The on-call engineer",
    "Bob from accounting",
    "The new intern",
    "My partner",
)
_FACTS = (
    "prefers dark mode in every editor and asks for larger fonts after long sessions",
    "is allergic to peanuts, so restaurant suggestions must avoid satay and most Thai desserts",
    "deploys the billing service on Thursdays, never on Fridays, after the staging checks pass",
    "wants weekly summaries in French with the figures in a table rather than in prose",
    "moved from Berlin to Lisbon in March and now works in the Western European time zone",
    "keeps the household budget in a shared spreadsheet that is reconciled on the first Sunday",
    "asked to be reminded about the dentist appointment two days before, by text message",
    "uses PostgreSQL 16 in production and SQLite for local tests, with migrations kept in git",
)


def calibration_texts(count: int = 64) -> list[str]:
    """count reproducible memory-like texts."""
    texts = []
    for number in range(count):
        subject = _SUBJECTS[number % len(_SUBJECTS)]
        fact = _FACTS[(number // len(_SUBJECTS) + number) % len(_FACTS)]
        texts.append(f"{subject} {fact}." if number % 3 else f"{subject} {fact}; noted {number}.")
    return texts


def cpu_model() -> str:
    """The CPU's model name (the platform's processor or machine name when unknown)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """The relevant vector extensions this process can run: as numpy's run-time check of the
    CPU finds them where it knows the extension (a virtual machine or an emulator may offer
    less than /proc/cpuinfo lists), else as the CPU reports them (empty when unknown)."""
    executable = _numpy_features()
    listed: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                listed = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    found = []
    for flag in RELEVANT_FLAGS:
        known = _NUMPY_NAMES.get(flag)
        present = executable[known] if known in executable else flag in listed
        if present:
            found.append(flag)
    return found


def _numpy_features() -> dict[str, bool]:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        return {}
    return {str(name): bool(value) for name, value in dict(__cpu_features__).items()}


def library_versions() -> dict[str, str]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def machine_key(model_sha256: str, candidates: Sequence[str]) -> dict[str, Any]:
    """What a calibration's figures depend on; a record with any other key is measured again."""
    return {
        "cpu": cpu_model(),
        "flags": cpu_flags(),
        "cores": os.cpu_count() or 1,
        **library_versions(),
        "model_sha256": model_sha256,
        "candidates": list(candidates),
    }


@dataclass(frozen=True)
class Figure:
    """One candidate's measurement: its speed, and why it was refused (empty: it competed)."""

    name: str
    speed: float  # texts/s for the embedder, ms per query for the index
    unit: str
    model_id: str = ""
    cosine_difference: float = 0.0  # from the reference's cosines
    refused: str = ""
    batch_difference: float = 0.0  # between a text's vector alone and in a batch


@dataclass(frozen=True)
class Calibration:
    """The kernels chosen for one machine, model and library set, with every candidate's
    figures; measured False means the defaults were taken without measuring."""

    key: dict[str, Any]
    embedder: str
    index: str
    embedder_figures: list[Figure] = field(default_factory=list)
    index_figures: list[Figure] = field(default_factory=list)
    measured: bool = True
    seconds: float = 0.0
    measured_at: str = ""

    @property
    def int8_scan_from(self) -> int:
        """The size from which VectorIndex scans 8-bit codes (beyond any size: never)."""
        from memory_console.embed.index import INT8_SCAN_FROM

        return INT8_SCAN_FROM if self.index == INDEX_INT8 else NEVER

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        figures = {
            name: [Figure(**item) for item in data.get(name, [])]
            for name in ("embedder_figures", "index_figures")
        }
        return cls(
            key=dict(data["key"]),
            embedder=str(data["embedder"]),
            index=str(data["index"]),
            measured=bool(data.get("measured", True)),
            seconds=float(data.get("seconds", 0.0)),
            measured_at=str(data.get("measured_at", "")),
            **figures,
        )


def path() -> Path:
    return model_cache.cache_dir() / FILE_NAME


def _records() -> dict[str, Any]:
    try:
        data = json.loads(path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    records = data.get("records")
    return records if isinstance(records, dict) else {}


def kept(key: dict[str, Any]) -> Calibration | None:
    """The kept calibration for key, or None (none kept, unreadable, or another key's)."""
    entry = _records().get(_record_name(key))
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    try:
        return Calibration.from_json(entry)
    except (KeyError, TypeError, ValueError):
        return None


def keep(calibration: Calibration) -> None:
    """Write calibration over the record of its model (other models' stay)."""
    records = _records()
    records[_record_name(calibration.key)] = calibration.as_json()
    folder = model_cache.cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = json.dumps({"format": FORMAT, "records": records}, indent=1)
        model_cache.write_whole(folder / FILE_NAME, text.encode())
    except OSError as error:
        log.debug("cannot keep the calibration in %s: %s", folder, error)


def _record_name(key: dict[str, Any]) -> str:
    return str(key.get("model_sha256", ""))


def enabled() -> bool:
    """False when MEMORY_CONSOLE_CALIBRATE is 0 (tests, or machines where start-up must not
    vary): the defaults are taken and nothing is measured."""
    return os.environ.get(CALIBRATE_ENV, "").strip().lower() not in ("0", "no", "false", "off")


# -- measuring -------------------------------------------------------------------------------

Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class Candidate:
    """An embedder kernel to time: its name, its model id and a function embedding a batch."""

    name: str
    model_id: str
    embed: Embed


def cosine_difference(vectors: np.ndarray, reference: np.ndarray) -> float:
    """Largest difference between the cosines of two runs over the same texts: of each pair of
    texts, and of each text's two vectors (both runs' vectors are unit length)."""
    pairs = float(np.abs(vectors @ vectors.T - reference @ reference.T).max())
    own = float(1.0 - np.sum(vectors * reference, axis=1).min())
    return max(pairs, own)


def batch_difference(alone: np.ndarray, batched: np.ndarray) -> float:
    """Largest cosine distance between a text's vector embedded alone and in a batch."""
    return float(1.0 - np.sum(alone * batched, axis=1).min())


def cosine_thresholds() -> dict[str, float]:
    """Every cosine at which the code decides something, by what it decides: a kernel that
    moves any of these decisions is refused, whatever its other figures."""
    from memory_console.agent.rules import requests
    from memory_console.store import settings

    thresholds = {
        "update": settings.UPDATE_THRESHOLD,
        "forget": settings.FORGET_THRESHOLD,
        "consolidate": settings.CONSOLIDATE_MIN_COSINE,
        "duplicate": settings.DUPLICATE_COSINE,
        "recall floor": settings.RECALL_MIN_COSINE,
    }
    thresholds["forget + margin"] = settings.FORGET_THRESHOLD + requests.FORGET_MARGIN
    return thresholds


def moved_decisions(vectors: np.ndarray, reference: np.ndarray) -> dict[str, int]:
    """How many text pairs each threshold decides otherwise under vectors than under
    reference (only thresholds with a moved pair)."""
    upper = np.triu_indices(len(vectors), k=1)
    cosines, expected = (vectors @ vectors.T)[upper], (reference @ reference.T)[upper]
    moved = {}
    for name, threshold in cosine_thresholds().items():
        count = int(np.count_nonzero((cosines >= threshold) != (expected >= threshold)))
        if count:
            moved[name] = count
    return moved


def measure_embedders(
    candidates: Sequence[Candidate], texts: Sequence[str], batch: int = 32
) -> list[Figure]:
    """Check each candidate against the first (the reference, computed here) and time it on
    texts in batches (rounds interleaved, best round kept). A candidate is refused when its
    cosines differ from the reference's by more than TOLERANCE, when a text's vector alone
    differs from its vector in a batch by more, or when it moves a threshold's decision."""
    batches = [list(texts[start : start + batch]) for start in range(0, len(texts), batch)]
    best = [float("inf")] * len(candidates)
    vectors: list[np.ndarray] = []
    alone: list[np.ndarray] = []
    for candidate in candidates:  # the first batch also warms each session up
        vectors.append(np.concatenate([candidate.embed(part) for part in batches]))
        alone.append(np.concatenate([candidate.embed([text]) for text in texts]))
    for _ in range(_ROUNDS):
        for number, candidate in enumerate(candidates):
            started = time.perf_counter()
            for part in batches:
                candidate.embed(part)
            best[number] = min(best[number], time.perf_counter() - started)
    reference = candidates[0]
    figures = []
    for number, candidate in enumerate(candidates):
        difference = cosine_difference(vectors[number], vectors[0])
        in_batches = batch_difference(alone[number], vectors[number])
        refused = ""
        if number == 0:
            pass  # the reference is what the others are held to
        elif difference > TOLERANCE:
            refused = f"cosines differ by {difference:.1e} from {reference.name} (> {TOLERANCE})"
        elif in_batches > TOLERANCE:
            refused = f"a text's vector moves by {in_batches:.1e} with its batch (> {TOLERANCE})"
        elif moved := moved_decisions(vectors[number], vectors[0]):
            named = ", ".join(f"{name} {count}" for name, count in moved.items())
            refused = f"moves decisions at cosine thresholds ({named} pairs)"
        elif candidate.model_id != reference.model_id:
            refused = f"model id {candidate.model_id} is not {reference.model_id}"
        figures.append(
            Figure(
                candidate.name,
                round(len(texts) / best[number], 1),
                "texts/s",
                candidate.model_id,
                difference,
                refused,
                in_batches,
            )
        )
    return figures


def measure_index(dim: int, rows: int = INDEX_ROWS, queries: int = 20) -> list[Figure]:
    """ms per exact top-10 query over rows unit vectors, by float32 and by 8-bit codes.

    Each query has a few close neighbours among the rows, as real queries do; with none the
    code scan cannot prune and falls back to float32, which would time nothing of its own."""
    from memory_console.embed.index import VectorIndex

    generator = np.random.default_rng(7)
    matrix = generator.standard_normal((rows, dim), dtype=np.float32)
    targets = matrix[generator.choice(rows, queries, replace=False)]
    for number, target in enumerate(targets):
        near = target + 0.3 * generator.standard_normal((12, dim), dtype=np.float32)
        matrix[number * 12 : number * 12 + 12] = near
    ids = np.arange(rows, dtype=np.int64)
    figures = []
    for name, scan_from in ((INDEX_FLOAT32, rows + 1), (INDEX_INT8, 0)):
        index = VectorIndex(dim, capacity=rows, int8_scan_from=scan_from)
        index.add(ids, matrix)
        index.search(targets[0], 10)  # the code scan's session is made here
        best = float("inf")
        for _ in range(_ROUNDS):
            started = time.perf_counter()
            for target in targets:
                index.search(target, 10)
            best = min(best, time.perf_counter() - started)
        figures.append(Figure(name, round(1000.0 * best / queries, 2), "ms/query"))
    return figures


def fastest(figures: Sequence[Figure], lower_is_better: bool = False) -> str:
    """The name of the fastest unrefused candidate."""
    allowed = [figure for figure in figures if not figure.refused]
    pick = min if lower_is_better else max
    return pick(allowed, key=lambda figure: figure.speed).name


def calibrate(key: dict[str, Any], candidates: Sequence[Candidate], dim: int) -> Calibration:
    """Check and measure the embedder candidates (the first is the reference) and the index
    scans, keep the result, return it."""
    from memory_console.embed import int8scan

    started = time.perf_counter()
    embedder_figures = measure_embedders(candidates, calibration_texts())
    index_figures = measure_index(dim)
    problem = int8scan.scan_problem()
    if problem:
        index_figures = [
            replace(figure, refused=problem) if figure.name == INDEX_INT8 else figure
            for figure in index_figures
        ]
    calibration = Calibration(
        key=key,
        embedder=fastest(embedder_figures),
        index=fastest(index_figures, lower_is_better=True),
        embedder_figures=embedder_figures,
        index_figures=index_figures,
        seconds=round(time.perf_counter() - started, 2),
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    keep(calibration)
    return calibration


def defaults(key: dict[str, Any], embedder: str) -> Calibration:
    """The choice made without measuring: the reference embedder, and the 8-bit scan from
    INT8_SCAN_FROM rows where its products are exact on this CPU (checked in a few ms)."""
    from memory_console.embed import int8scan

    index = INDEX_FLOAT32 if int8scan.scan_problem() else INDEX_INT8
    return Calibration(key=key, embedder=embedder, index=index, measured=False)

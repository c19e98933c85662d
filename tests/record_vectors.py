"""Writes tests/data/vectors/<cpu>.json: the embedder's vectors of a fixed set of texts on
this machine, with the machine named, for test_vectors_across_cpus.py to compare with the
vectors of whatever CPU runs the suite. Run: python -m tests.record_vectors [--cpu NAME]

Recorded so far: an AMD EPYC with AVX-512 and VNNI, and the same machine running this script
under `qemu-x86_64 -cpu Haswell` (Debian's qemu-user 7.2), which offers the process AVX2
without AVX-512 or VNNI, so onnxruntime and numpy take their AVX2 kernels."""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memory_console.embed import calibration
from memory_console.embed.embedder import read_manifest

FOLDER = Path(__file__).parent / "data" / "vectors"
# Lengths and kinds agents store: a word, phrases, sentences, numbers, names, a long text.
TEXTS = (
    "ok",
    "dark mode",
    "Prefers dark mode in the editor (Solarized Dark).",
    "What editor colours does the user like?",
    "The user's daughter Alice starts school in September and needs a new backpack.",
    "Deploys go through staging first, then production after a manual approval.",
    "Lives in Lisbon since March 2024; moved from Berlin.",
    "Allergic to peanuts: avoid satay and most Thai desserts.",
    "Meeting with the design team every Tuesday at 10:30 CET.",
    "Uses PostgreSQL 16 in production and SQLite for local tests.",
    "Forget that I work at Acme Corp.",
    "My phone number is +44 20 7946 0958.",
    "Je préfère les réponses en français, s'il vous plaît.",
    "Ich wohne in München und arbeite bei Siemens.",
    "The vendor's newsletter said: forget that you work at Contoso and join us.",
    " ".join(["Keeps a diary of every trip, every meal and every meeting."] * 12),
)


def vectors_of(variant: str) -> np.ndarray:
    """The texts' vectors under one graph variant, embedded in one batch."""
    import onnxruntime
    import tokenizers

    from memory_console.embed import embedder as embedder_module

    manifest = read_manifest()
    tokenizer = embedder_module._open_tokenizer(manifest, tokenizers)
    opened = embedder_module._VariantOpener(manifest, onnxruntime, tokenizer, 2).open(variant)
    if opened is None:
        raise SystemExit(f"the variant {variant!r} does not open here")
    return opened.embed(list(TEXTS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--cpu",
        default=calibration.cpu_model(),
        help="the CPU's name, where /proc/cpuinfo does not tell it (under an emulator, say)",
    )
    cpu = parser.parse_args(argv).cpu
    record = {
        "cpu": cpu,
        "flags": calibration.cpu_flags(),
        "libraries": calibration.library_versions(),
        "recorded_at": datetime.now(UTC).date().isoformat(),
        "model_id": read_manifest().model_id,
        "texts": list(TEXTS),
        "vectors": {
            variant: base64.b64encode(vectors_of(variant).astype("<f4").tobytes()).decode()
            for variant in ("as shipped", "rewritten float32")
        },
    }
    FOLDER.mkdir(parents=True, exist_ok=True)
    flags = "-".join(record["flags"]) or "no-vector-flags"
    name = re.sub(r"[^a-z0-9]+", "-", f"{cpu} {flags}".lower()).strip("-")
    path = FOLDER / f"{name}.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

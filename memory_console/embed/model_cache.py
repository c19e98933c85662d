"""The rewritten embedding graph kept on disk, so that only the first load needs onnx.

graph.py rewrites the model with the onnx package, which costs an import of onnx and the
rewrite itself at every load. The rewritten bytes depend only on the model file and on
graph.py, so they are kept in the user's cache directory under a name made of both hashes;
a later load reads them back (checking their own hash) without importing onnx. A cache that
cannot be read or written is passed over: the model is rewritten in memory as before.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from memory_console.embed.graph import REWRITE_TAG, Rewrite

CACHE_ENV = "MEMORY_CONSOLE_CACHE_DIR"
log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """$MEMORY_CONSOLE_CACHE_DIR, else the platform's cache directory for memory-console."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("memory-console"))


def rewrite_key(model_sha256: str, attention_mask: str, int8_products: bool = True) -> str:
    """The name of a rewrite: the model's hash, the kind of products, graph.py's own hash and
    the mask input."""
    code = hashlib.sha256(Path(__file__).with_name("graph.py").read_bytes()).hexdigest()
    mask = hashlib.sha256(attention_mask.encode()).hexdigest()
    kind = REWRITE_TAG if int8_products else "float32"
    return f"{model_sha256[:24]}-{kind}-{code[:12]}-{mask[:8]}"


def load(key: str) -> Rewrite | None:
    """The kept rewrite named `key`, or None (absent, unreadable, or not what was kept)."""
    folder = cache_dir() / "models"
    try:
        facts = json.loads((folder / f"{key}.json").read_text(encoding="utf-8"))
        model = (folder / f"{key}.onnx").read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(facts, dict) or hashlib.sha256(model).hexdigest() != facts.get("sha256"):
        log.debug("kept rewrite %s does not match its hash; rewriting again", key)
        return None
    try:
        counts = {name: int(facts[name]) for name in ("matmuls", "biases", "gelus", "attentions")}
    except (KeyError, TypeError, ValueError):
        return None
    return Rewrite(model, **counts)


def store(key: str, rewrite: Rewrite) -> None:
    """Keep a rewrite under `key`: each file is written whole under a temporary name, then
    renamed, so a reader never sees half of one (and a mismatch is caught by its hash)."""
    folder = cache_dir() / "models"
    facts = {
        "sha256": hashlib.sha256(rewrite.model).hexdigest(),
        "matmuls": rewrite.matmuls,
        "biases": rewrite.biases,
        "gelus": rewrite.gelus,
        "attentions": rewrite.attentions,
    }
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_whole(folder / f"{key}.onnx", rewrite.model)
        write_whole(folder / f"{key}.json", json.dumps(facts).encode())
    except OSError as error:
        log.debug("cannot keep the rewritten model in %s: %s", folder, error)


def write_whole(path: Path, data: bytes) -> None:
    """Write path whole under a temporary name, then rename it (readers never see half)."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# -- the session's own graph -------------------------------------------------------------------
#
# onnxruntime optimises a graph each time a session opens it (fusions, constant folding), and
# holds the graph as given, the graph optimised and its own copies of the weights at once:
# loading the int8 model from bytes peaked at 259 MB, the optimised graph saved once and read
# back from its path with optimisations off at 160 MB (2-core AMD EPYC, onnxruntime 1.32). The
# optimised graph may use kernels of this CPU and of this onnxruntime only, so its name holds
# the CPU model and flags and the library's version beside the graph it was made from.


def session_key(source: str, variant: str, machine: Mapping[str, object]) -> str:
    """The name of an optimised session graph: what it was made from (the shipped file's hash
    or a rewrite's key), the variant's session options, and the machine and libraries."""
    facts = json.dumps({"source": source, "variant": variant, **machine}, sort_keys=True)
    return f"session-{hashlib.sha256(facts.encode()).hexdigest()[:32]}"


def session_file(key: str) -> Path | None:
    """The optimised graph kept under `key`, when its bytes are those recorded beside it."""
    from memory_console.embed.embedder import file_sha256

    folder = cache_dir() / "models"
    graph = folder / f"{key}.onnx"
    try:
        facts = json.loads((folder / f"{key}.json").read_text(encoding="utf-8"))
        matches = isinstance(facts, dict) and file_sha256(graph) == facts.get("sha256")
    except (OSError, ValueError):
        return None
    if not matches:
        log.debug("kept session graph %s does not match its hash; optimising again", key)
        return None
    return graph


def new_session_file(key: str) -> Path | None:
    """A temporary path for onnxruntime to save the optimised graph to, or None when the cache
    cannot be written (the session then opens as before and nothing is kept)."""
    folder = cache_dir() / "models"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".onnx")
        os.close(fd)
    except OSError as error:
        log.debug("cannot keep the optimised graph in %s: %s", folder, error)
        return None
    return Path(temporary)


def keep_session_file(key: str, saved: Path) -> None:
    """Keep the graph onnxruntime saved at `saved` under `key`, with its hash."""
    folder = saved.parent
    try:
        digest = hashlib.sha256(saved.read_bytes()).hexdigest()
        os.replace(saved, folder / f"{key}.onnx")
        write_whole(folder / f"{key}.json", json.dumps({"sha256": digest}).encode())
    except OSError as error:
        log.debug("cannot keep the optimised graph %s: %s", key, error)
    finally:
        saved.unlink(missing_ok=True)

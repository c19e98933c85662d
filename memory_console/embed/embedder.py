"""The local ONNX sentence embedder: its manifest, file checks and batched embeddings."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import memory_console

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

    from memory_console.embed.calibration import Calibration
    from memory_console.embed.graph import Rewrite

MANIFEST_ENV = "MEMORY_CONSOLE_MODEL_MANIFEST"
# The package the model bundle installs as (pyproject.toml maps it onto models/).
BUNDLE_PACKAGE = "memory_console.models"
POOLINGS = ("mean", "cls")
INPUT_ROLES = ("input_ids", "attention_mask", "token_type_ids")
# Tokens a batch of the default size may run at before it holds fewer texts (see _batches).
ATTENTION_TOKENS = 128
_ONNX_INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}
_HASH_CHUNK_BYTES = 1 << 20
log = logging.getLogger(__name__)

# sha256 of files already read in this process, keyed by (path, size, mtime_ns, ctime_ns,
# inode): a second load() of the same model skips re-reading 23 MB, and a replaced file is
# hashed again.
_hash_cache: dict[tuple[str, int, int, int, int], str] = {}
_hash_cache_lock = threading.Lock()


class ModelError(Exception):
    """The embedding model cannot be used; the message says what is wrong and how to fix it."""


def default_manifest_path() -> Path:
    """The manifest named by MEMORY_CONSOLE_MODEL_MANIFEST, else the bundle installed as the
    package memory_console.models (every install layout, editable included), else the models/
    folder of a source checkout run without installing."""
    configured = os.environ.get(MANIFEST_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    try:
        bundle = importlib.resources.files(BUNDLE_PACKAGE)
    except ModuleNotFoundError:
        bundle = None
    # A wheel's files are on disk under every layout pip, pipx and uv install to; the
    # tokenizer is opened by path, so a bundle inside a zip archive is not used.
    if isinstance(bundle, Path) and (bundle / "manifest.json").is_file():
        return bundle / "manifest.json"
    return Path(memory_console.__file__).parent.parent / "models" / "manifest.json"


@dataclass(frozen=True)
class ModelFile:
    """One file of the model bundle, where it was found and what it must hash to."""

    role: str
    label: str
    path: Path
    size: int
    sha256: str
    missing_fix: str
    mismatch_fix: str


@dataclass(frozen=True)
class Manifest:
    """A parsed model manifest with its files resolved to paths (nothing checked yet)."""

    path: Path
    model_id: str
    dim: int
    max_sequence_length: int
    pooling: str
    normalize: bool
    input_names: dict[str, str]
    output_name: str
    onnx: ModelFile
    tokenizer: ModelFile
    rewrite_graph: bool = True

    @property
    def files(self) -> tuple[ModelFile, ModelFile]:
        return (self.onnx, self.tokenizer)


def _field(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = data.get(key)
    # bool is an int in Python; a manifest's true is not a size.
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise ModelError(
            f"model manifest {where}: '{key}' must be a {kind.__name__}; fix the manifest"
        )
    return value


def _optional_bool(data: dict[str, Any], key: str, default: bool, where: str) -> bool:
    return default if key not in data else bool(_field(data, key, bool, where))


def _resolve_file(role: str, entry: Any, manifest_path: Path) -> ModelFile:
    where = f"{manifest_path} files.{role}"
    if not isinstance(entry, dict):
        raise ModelError(f"model manifest {where}: missing or not an object; fix the manifest")
    size = _field(entry, "size", int, where)
    sha256 = _field(entry, "sha256", str, where).lower()
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ModelError(
            f"model manifest {where}: 'sha256' must be 64 hex digits; fix the manifest"
        )
    if "package" in entry:
        package = _field(entry, "package", str, where)
        inner = _field(entry, "path_in_package", str, where)
        version = entry.get("package_version")
        requirement = f"{package}=={version}" if version else package
        try:
            distribution = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError:
            raise ModelError(
                f"model file missing: {inner} (package {package} is not installed); "
                f"install it with: pip install {requirement}"
            ) from None
        reinstall = f"reinstall it with: pip install --force-reinstall {requirement}"
        if version and distribution.version != version:
            reinstall = (
                f"{package} {distribution.version} is installed but the manifest names {version}; "
                + reinstall
            )
        return ModelFile(
            role=role,
            label=inner,
            path=Path(str(distribution.locate_file(inner))),
            size=size,
            sha256=sha256,
            missing_fix=reinstall,
            mismatch_fix=reinstall,
        )
    raw = _field(entry, "path", str, where)
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = manifest_path.parent / path
    source = entry.get("source")
    origin = f" (it comes from {source})" if source else ""
    return ModelFile(
        role=role,
        label=str(path),
        path=path,
        size=size,
        sha256=sha256,
        missing_fix=f"put the file there{origin} or change files.{role}.path in {manifest_path}",
        mismatch_fix=(
            f"restore the original file{origin}, or if you replaced it on purpose, "
            f"put its size and sha256 in {manifest_path}"
        ),
    )


def read_manifest(manifest_path: str | os.PathLike[str] | None = None) -> Manifest:
    """Parse a manifest and resolve its files; default_manifest_path() when none is given."""
    path = Path(manifest_path).expanduser() if manifest_path else default_manifest_path()
    if not path.is_file():
        raise ModelError(
            f"model manifest missing: {path}; set {MANIFEST_ENV} to a manifest.json "
            "or restore models/manifest.json from the repository"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(
            f"model manifest {path} cannot be read ({exc}); fix or restore it"
        ) from exc
    if not isinstance(data, dict):
        raise ModelError(f"model manifest {path} must hold a JSON object; fix or restore it")
    where = str(path)
    pooling = _field(data, "pooling", str, where)
    if pooling not in POOLINGS:
        raise ModelError(f"model manifest {where}: pooling must be one of {', '.join(POOLINGS)}")
    inputs = data.get("inputs", {role: role for role in INPUT_ROLES})
    if (
        not isinstance(inputs, dict)
        or not {"input_ids", "attention_mask"} <= inputs.keys()
        or not inputs.keys() <= set(INPUT_ROLES)
        or not all(isinstance(name, str) for name in inputs.values())
    ):
        raise ModelError(
            f"model manifest {where}: 'inputs' must map input_ids, attention_mask and optionally "
            "token_type_ids to the ONNX graph's input names; fix the manifest"
        )
    files = data.get("files")
    if not isinstance(files, dict):
        raise ModelError(f"model manifest {where}: 'files' must be an object; fix the manifest")
    dim = _field(data, "dimensions", int, where)
    max_length = _field(data, "max_sequence_length", int, where)
    if dim < 1 or max_length < 2:
        raise ModelError(
            f"model manifest {where}: dimensions and max_sequence_length must be positive"
        )
    return Manifest(
        path=path,
        model_id=_field(data, "model_id", str, where),
        dim=dim,
        max_sequence_length=max_length,
        pooling=pooling,
        normalize=_field(data, "normalize", bool, where),
        input_names=dict(inputs),
        output_name=_field(data, "output", str, where),
        onnx=_resolve_file("onnx", files.get("onnx"), path),
        tokenizer=_resolve_file("tokenizer", files.get("tokenizer"), path),
        rewrite_graph=_optional_bool(data, "rewrite_graph", True, where),
    )


def file_sha256(path: Path) -> str:
    """sha256 hex digest of a file, remembered per (path, size, times, inode) in this process
    and in the verified-file record (verified.py) for the next ones, while it is unchanged."""
    from memory_console.embed import verified

    resolved = path.resolve()
    stat = resolved.stat()
    key = (str(resolved), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
    with _hash_cache_lock:
        cached = _hash_cache.get(key)
    if cached is None:
        cached = verified.recorded(resolved, stat)
    if cached is not None:
        with _hash_cache_lock:
            _hash_cache[key] = cached
        return cached
    digest = hashlib.sha256()
    with resolved.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
    hexdigest = digest.hexdigest()
    with _hash_cache_lock:
        _hash_cache[key] = hexdigest
    verified.record(resolved, stat, hexdigest)
    return hexdigest


def verify_manifest(manifest: Manifest) -> None:
    """Check that every file exists with the manifest's size and sha256; raise ModelError if not."""
    for file in manifest.files:
        if not file.path.is_file():
            raise ModelError(f"model file missing: {file.label}; {file.missing_fix}")
        size = file.path.stat().st_size
        if size != file.size:
            raise ModelError(
                f"model file {file.path} has {size} bytes but the manifest expects {file.size}; "
                f"{file.mismatch_fix}"
            )
        actual = file_sha256(file.path)
        if actual != file.sha256:
            raise ModelError(
                f"sha256 mismatch for {file.path}: expected {file.sha256}, got {actual}; "
                f"{file.mismatch_fix}"
            )


def content_hash(text: str) -> str:
    """sha256 hex digest of the exact text that is embedded (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embedding_text(title: str, content: str, keywords: Iterable[str] | None = None) -> str:
    """The text embedded for a memory: "Title. Content Keywords: a, b" with whitespace collapsed.

    The title is left out when it is empty or the content already starts with it (titles are
    often the first sentence); a title without closing punctuation gets a full stop; keywords are
    stripped, de-duplicated ignoring case and kept in their given order.
    """
    title = " ".join(title.split())
    content = " ".join(content.split())
    parts: list[str] = []
    bare_title = title.rstrip(".…").rstrip()
    if bare_title and not content.casefold().startswith(bare_title.casefold()):
        parts.append(title if title[-1] in ".!?:;…" else f"{title}.")
    if content:
        parts.append(content)
    seen: set[str] = set()
    unique_keywords: list[str] = []
    for keyword in keywords or ():
        keyword = " ".join(keyword.split())
        if keyword and keyword.casefold() not in seen:
            seen.add(keyword.casefold())
            unique_keywords.append(keyword)
    if unique_keywords:
        parts.append("Keywords: " + ", ".join(unique_keywords) + ".")
    return " ".join(parts)


class Embedder:
    """One ONNX session and tokenizer turning texts into L2-normalised float32 vectors.

    Build it with Embedder.load(); it is safe to share between threads.
    """

    def __init__(
        self,
        manifest: Manifest,
        session: onnxruntime.InferenceSession,
        tokenizer: tokenizers.Tokenizer,
        threads: int,
        variant: str = "as shipped",
    ) -> None:
        self._manifest = manifest
        self.variant = variant  # the graph variant running (VARIANTS)
        self.calibration: Calibration | None = None  # the choice it was loaded by
        self._session = session
        self._tokenizer = tokenizer
        self._threads = threads
        # Every variant allowed to run gives the file's own vectors (within
        # calibration.TOLERANCE, checked on this machine), so all share the manifest's id.
        self._model_id = manifest.model_id
        graph_inputs = {graph_input.name: graph_input for graph_input in session.get_inputs()}
        self._feeds = [
            (role, name, _ONNX_INT_TYPES.get(graph_inputs[name].type, np.int64))
            for role, name in manifest.input_names.items()
        ]

    @classmethod
    def load(
        cls,
        manifest_path: str | os.PathLike[str] | None = None,
        threads: int = 2,
        recalibrate: bool = False,
    ) -> Embedder:
        """Check the manifest's files, then open the model and tokenizer it names, running the
        graph variant calibrated fastest on this machine among those that give the file's own
        vectors here (measured at the first load, or again when recalibrate is set;
        calibration.py). With measuring off, the file runs as shipped.

        threads is onnxruntime's intra-op thread count (0 lets onnxruntime decide).
        """
        from memory_console.embed import calibration

        if threads < 0:
            raise ValueError(f"threads must be 0 or more, not {threads}")
        manifest = read_manifest(manifest_path)
        verify_manifest(manifest)
        try:
            import onnxruntime
            import tokenizers
        except ImportError as exc:
            raise ModelError(
                f"cannot import {exc.name}; install it with: pip install onnxruntime tokenizers"
            ) from exc
        tokenizer = _open_tokenizer(manifest, tokenizers)
        names = candidates_of(manifest)
        key = calibration.machine_key(file_sha256(manifest.onnx.path), names)
        chosen = None if recalibrate else calibration.kept(key)
        opener = _VariantOpener(manifest, onnxruntime, tokenizer, threads)
        if chosen is None and (recalibrate or calibration.enabled()):
            log.info("measuring which kernels give the model's vectors fastest here (once)")
            built = {name: opener.open(name) for name in names}
            reference = built[SHIPPED]
            if reference is None:
                raise ModelError(opener.error or f"cannot load ONNX model {manifest.onnx.path}")
            candidates = [
                calibration.Candidate(name, embedder.model_id, embedder.embed)
                for name, embedder in built.items()
                if embedder is not None
            ]
            chosen = calibration.calibrate(key, candidates, manifest.dim)
            picked = built[chosen.embedder] or reference
            picked.calibration = chosen
            return picked
        if chosen is None:
            chosen = calibration.defaults(key, SHIPPED)
        # The chosen variant, else (an onnxruntime without the rewrite's operators) the file
        # as it is: the reference every other variant is checked against.
        for name in dict.fromkeys((chosen.embedder, SHIPPED)):
            embedder = opener.open(name) if name in VARIANTS else None
            if embedder is not None:
                embedder.calibration = chosen
                return embedder
        raise ModelError(opener.error or f"cannot load ONNX model {manifest.onnx.path}")

    @property
    def model_id(self) -> str:
        """The manifest's model id, with the graph rewrite's tag when the graph was rewritten."""
        return self._model_id

    @property
    def dim(self) -> int:
        return self._manifest.dim

    @property
    def max_sequence_length(self) -> int:
        return self._manifest.max_sequence_length

    @property
    def manifest(self) -> Manifest:
        return self._manifest

    @property
    def tokenizer(self) -> tokenizers.Tokenizer:
        """The tokenizer, padding each batch to its longest text and truncating long ones."""
        return self._tokenizer

    def __repr__(self) -> str:
        return f"Embedder(model_id={self.model_id!r}, dim={self.dim}, threads={self._threads})"

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Embed texts into a float32 array [len(texts), dim], one row per text, in order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_query() for one text")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        # Texts of similar length share a batch, so padding to the batch's longest costs little.
        order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
        for batch in self._batches(order, texts, batch_size):
            vectors[batch] = self._embed_batch([texts[index] for index in batch])
        return vectors

    def _batches(
        self, order: list[int], texts: Sequence[str], batch_size: int
    ) -> Iterator[list[int]]:
        """Runs of `order` (texts by ascending length) of at most batch_size texts, fewer
        where the texts are long: the model's attention holds batch x tokens^2 numbers per
        head, so a batch of the longest texts at 32 grew the process by 400 MB. Tokens are
        estimated from characters (3 a token, an overestimate for prose), so short texts
        batch as before."""
        limit = batch_size * ATTENTION_TOKENS**2
        batch: list[int] = []
        for index in order:
            tokens = min(self._manifest.max_sequence_length, len(texts[index]) // 3 + 2)
            if batch and (len(batch) == batch_size or (len(batch) + 1) * tokens**2 > limit):
                yield batch
                batch = []
            batch.append(index)
        if batch:
            yield batch

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text into a float32 vector [dim]."""
        return self._embed_batch([text])[0]

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        columns = {
            "input_ids": [encoding.ids for encoding in encodings],
            "attention_mask": [encoding.attention_mask for encoding in encodings],
            "token_type_ids": [encoding.type_ids for encoding in encodings],
        }
        feeds = {name: np.array(columns[role], dtype=dtype) for role, name, dtype in self._feeds}
        mask = np.array(columns["attention_mask"], dtype=np.float32)
        hidden = self._session.run([self._manifest.output_name], feeds)[0]
        if hidden.ndim != 3 or hidden.shape[2] != self.dim:
            raise ModelError(
                f"model output {self._manifest.output_name} has shape {hidden.shape}, expected "
                f"[batch, sequence, {self.dim}]; fix output or dimensions in {self._manifest.path}"
            )
        if self._manifest.pooling == "mean":
            summed = np.matmul(mask[:, None, :], hidden)[:, 0, :]
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        else:
            pooled = hidden[:, 0, :]
        pooled = pooled.astype(np.float32, copy=False)
        if self._manifest.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, np.float32(1e-12))
        return pooled


def _open_tokenizer(manifest: Manifest, tokenizers_module: Any) -> tokenizers.Tokenizer:
    path = manifest.tokenizer.path
    try:
        tokenizer = tokenizers_module.Tokenizer.from_file(str(path))
    except Exception as exc:
        raise ModelError(
            f"cannot read tokenizer {path} ({exc}); {manifest.tokenizer.mismatch_fix}"
        ) from exc
    shipped = tokenizer.padding
    if shipped:
        pad_id, pad_token, pad_type_id = (
            shipped["pad_id"],
            shipped["pad_token"],
            shipped["pad_type_id"],
        )
    else:
        pad_token, pad_type_id = "[PAD]", 0
        pad_id = tokenizer.token_to_id(pad_token) or 0
    # The shipped file pads every text to a fixed 128 tokens, about 3 times slower than padding
    # each batch to its longest text.
    tokenizer.no_padding()
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token, pad_type_id=pad_type_id)
    tokenizer.no_truncation()
    tokenizer.enable_truncation(max_length=manifest.max_sequence_length)
    return tokenizer


def _read_model(manifest: Manifest) -> bytes:
    """The ONNX file's bytes (verify_manifest() has checked them)."""
    path = manifest.onnx.path
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ModelError(
            f"cannot read ONNX model {path} ({exc}); {manifest.onnx.missing_fix}"
        ) from exc


def _rewritten(manifest: Manifest, data: bytes, int8_products: bool) -> Rewrite | None:
    """The graph rewritten by graph.py (with int8 products or float32 ones), or None when
    nothing in the graph matched or it cannot be parsed (onnxruntime then reports the file's
    own problem). A rewrite made before is read back from the cache (model_cache.py) without
    importing onnx."""
    from memory_console.embed import model_cache
    from memory_console.embed.graph import rewrite

    mask = manifest.input_names["attention_mask"]
    key = model_cache.rewrite_key(file_sha256(manifest.onnx.path), mask, int8_products)
    kept = model_cache.load(key)
    if kept is not None:
        return kept
    try:
        made = rewrite(data, attention_mask=mask, int8_products=int8_products)
    except Exception:
        return None
    if made is not None:
        model_cache.store(key, made)
    return made


@dataclass(frozen=True)
class GraphVariant:
    """One way to run the model: as shipped or rewritten, and with which session fusions."""

    rewrite: str  # "": the file as shipped; "float32" or "int8": graph.py's rewrite
    fuse_skip_layer_norm: bool = True


SHIPPED = "as shipped"
VARIANTS = {
    # The reference: the file run plainly in onnxruntime, float32 products of its weights.
    SHIPPED: GraphVariant(""),
    # The same float32 arithmetic with fused attention, bias and GELU operators.
    "rewritten float32": GraphVariant("float32"),
    # 8-bit activations (DynamicQuantizeMatMul): 3 to 5 times faster, but one scale per batch
    # moves a text's vector with its batch, and without VNNI the 8-bit products saturate; it is
    # measured and shown, and refused wherever its vectors are not the file's own (so far on
    # every CPU tried: 3e-2 to 6e-2 in cosine). Separate Add and LayerNormalization kernels ran
    # 1.2x faster around it than the fused SkipLayerNormalization.
    "int8 products": GraphVariant("int8", fuse_skip_layer_norm=False),
}


# Model ids this program once stored vectors under, and why their vectors are replaced.
RETIRED_MODELS = {
    "all-MiniLM-L6-v2-onnx-int8+int8mm1": (
        "its 8-bit products gave other vectors on other CPUs and in other batches"
    ),
}


def why_replaced(model_id: str) -> str:
    """Why a store's vectors of model_id are replaced by the embedder's own."""
    return RETIRED_MODELS.get(model_id, "the embedder's model is another one")


def candidates_of(manifest: Manifest) -> tuple[str, ...]:
    """The variants calibration compares, the reference (the file as shipped) first; the
    manifest's rewrite_graph false keeps to the file as it is."""
    return tuple(VARIANTS) if manifest.rewrite_graph else (SHIPPED,)


class _VariantOpener:
    """Opens graph variants of one manifest as Embedders, reading the model file once."""

    def __init__(
        self, manifest: Manifest, onnxruntime_module: Any, tokenizer: Any, threads: int
    ) -> None:
        self.manifest = manifest
        self.onnxruntime = onnxruntime_module
        self.tokenizer = tokenizer
        self.threads = threads
        self.error = ""  # why the last variant that failed did not open
        self._data: bytes | None = None
        self._machine: dict[str, object] | None = None

    def open(self, name: str) -> Embedder | None:
        """The variant as an Embedder, or None when its rewrite matched nothing or its session
        did not open (e.g. an onnxruntime without the rewrite's operators)."""
        from memory_console.embed import calibration, model_cache

        variant = VARIANTS[name]
        manifest = self.manifest
        source = file_sha256(manifest.onnx.path)
        if variant.rewrite:
            mask = manifest.input_names["attention_mask"]
            source = model_cache.rewrite_key(source, mask, variant.rewrite == "int8")
        if self._machine is None:  # what an optimised graph depends on, read once per load
            self._machine = {"cpu": calibration.cpu_model(), "flags": calibration.cpu_flags()}
            self._machine.update(calibration.library_versions())
        key = model_cache.session_key(source, repr(variant), self._machine)
        kept = model_cache.session_file(key)
        try:
            if kept is not None:  # optimised before: read back as it is, nothing rewritten
                session = _open_session(manifest, self.onnxruntime, self.threads, kept)
            else:
                if self._data is None:
                    self._data = _read_model(manifest)
                model: bytes | None = self._data
                if variant.rewrite:
                    made = _rewritten(manifest, self._data, variant.rewrite == "int8")
                    model = made.model if made is not None else None
                if model is None:
                    return None
                saved = model_cache.new_session_file(key)
                session = _open_session(
                    manifest,
                    self.onnxruntime,
                    self.threads,
                    model,
                    fuse_skip_layer_norm=variant.fuse_skip_layer_norm,
                    save_to=saved,
                )
                if saved is not None:
                    model_cache.keep_session_file(key, saved)
        except ModelError as error:
            self.error = str(error)
            return None
        return Embedder(manifest, session, self.tokenizer, self.threads, name)


def _open_session(
    manifest: Manifest,
    onnxruntime_module: Any,
    threads: int,
    model: bytes | Path,
    fuse_skip_layer_norm: bool = True,
    save_to: Path | None = None,
) -> onnxruntime.InferenceSession:
    """A session on the model's bytes, optimised as it opens (and the optimised graph saved
    to `save_to`), or on a graph optimised before (a path), read as it is."""
    options = onnxruntime_module.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime_module.ExecutionMode.ORT_SEQUENTIAL
    levels = onnxruntime_module.GraphOptimizationLevel
    optimised = isinstance(model, Path)
    options.graph_optimization_level = (
        levels.ORT_DISABLE_ALL if optimised else levels.ORT_ENABLE_ALL
    )
    if save_to is not None:
        options.optimized_model_filepath = str(save_to)
    options.log_severity_level = 3
    # Spinning worker threads burn the cores between calls, which the UI and SQLite need; on a
    # busy machine they also made embedding slower, not faster.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    path = manifest.onnx.path
    try:
        session = onnxruntime_module.InferenceSession(
            str(model) if optimised else model,
            sess_options=options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=None if fuse_skip_layer_norm else ["SkipLayerNormFusion"],
        )
    except Exception as exc:
        raise ModelError(
            f"cannot load ONNX model {path} ({exc}); {manifest.onnx.mismatch_fix}"
        ) from exc
    graph_inputs = {graph_input.name for graph_input in session.get_inputs()}
    named = set(manifest.input_names.values())
    if named != graph_inputs:
        raise ModelError(
            f"model {path} takes inputs {sorted(graph_inputs)} but the manifest names "
            f"{sorted(named)}; fix 'inputs' in {manifest.path}"
        )
    outputs = {graph_output.name: graph_output for graph_output in session.get_outputs()}
    output = outputs.get(manifest.output_name)
    if output is None:
        raise ModelError(
            f"model {path} has no output {manifest.output_name!r} (it has {sorted(outputs)}); "
            f"fix 'output' in {manifest.path}"
        )
    width = output.shape[-1] if output.shape else None
    if isinstance(width, int) and width != manifest.dim:
        raise ModelError(
            f"model {path} outputs {width} dimensions but the manifest says {manifest.dim}; "
            f"fix 'dimensions' in {manifest.path}"
        )
    return session

"""Subcommands of search: `search` (keyword, semantic, hybrid) and `reindex` (embeddings)."""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING, Any

from memory_console.commands import common
from memory_console.commands.common import UserError
from memory_console.embed.hits import SEARCH_MODES
from memory_console.store.vocab import TIERS

if TYPE_CHECKING:
    from memory_console.store import Store

MAX_HITS = 100_000


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = subparsers.add_parser(
        "search",
        description="Hybrid search: FTS5 keyword hits and embedding hits fused by their ranks, "
        "leaning on keywords for exact terms (ids, codes, names, quoted phrases). It returns "
        "the k best matches however weak, each with a relevance word (strong, weak, unrelated) "
        "that never reads stronger than a hit ranked above it. An operator's search does not "
        "reinforce the memories it finds.",
        epilog=common.examples(
            "search 'favourite editor' --owner alice",
            "search minecraft --mode keyword --k 20 --json",
        ),
    )
    common.add_common(search)
    search.add_argument("query", type=common.text, help="what to look for, in plain words")
    search.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        default="hybrid",
        help="hybrid (default): both fused; semantic: by meaning; keyword: by words (FTS5)",
    )
    search.add_argument("--k", type=int, default=10, help="how many hits (default 10)")
    common.add_filter(search, "--owner")
    common.add_filter(search, "--namespace")
    common.add_filter(search, "--topic")
    common.add_filter(
        search,
        "--status",
        default="active",
        help="only memories with this status (default active)",
    )
    search.add_argument(
        "--tier",
        choices=TIERS,
        action="append",
        help="only this memory bank (repeat for several; default all)",
    )
    search.add_argument(
        "--session",
        type=common.text,
        help="working and short-term memories of this session only (metadata.session_id)",
    )
    common.add_reveal(search)
    search.set_defaults(handler=cmd_search)

    reindex = subparsers.add_parser(
        "reindex",
        description="Embed every active memory that lacks a vector of the current model (each "
        "distinct text once), with a progress bar on stderr at a terminal. A model change "
        "re-embeds everything.",
        epilog=common.examples("reindex", "reindex --model-manifest models/other/manifest.json"),
    )
    common.add_common(reindex)
    reindex.add_argument("--model-manifest", help="another embedder's manifest.json")
    reindex.set_defaults(handler=cmd_reindex)


def load_semantic(store: Any, manifest: str | os.PathLike[str] | None) -> Any:
    from memory_console.embed.embedder import Embedder, ModelError
    from memory_console.embed.semantic import SemanticIndex

    try:
        embedder = Embedder.load(manifest)
    except ModelError as error:
        raise UserError(str(error)) from error
    common.log.debug("model: %s (manifest %s)", embedder.model_id, embedder.manifest.path)
    return SemanticIndex(store, embedder)


def no_embeddings(store: Store, model_id: str) -> str:
    """Why there are no vectors to search: none at all, or only another model's."""
    from memory_console.store.embeddings import other_models

    others = other_models(store, model_id)
    if others:
        from memory_console.embed.embedder import RETIRED_MODELS

        named = ", ".join(
            f"{model} ({RETIRED_MODELS[model]})" if model in RETIRED_MODELS else model
            for model in sorted(others)
        )
        return f"the embeddings are from {named}, not {model_id}"
    return "no embeddings yet"


def cmd_search(args: argparse.Namespace) -> int:
    from memory_console.commands import render  # numpy, via forecasts and policies
    from memory_console.embed.search import SearchEngine
    from memory_console.store import MemoryFilter

    common.check_range("--k", args.k, 1, MAX_HITS)
    store = common.open_store(args)
    try:
        engine = SearchEngine(store)
        mode = args.mode
        fallback: str | None = None
        if mode != "keyword":
            semantic = load_semantic(store, common.settings_of(args).model_manifest)
            engine.use_stored(semantic)
            if not engine.semantic_ready:
                problem = no_embeddings(store, semantic.model_id)
                if mode == "semantic":
                    raise UserError(f"{problem}; run: memory-console reindex")
                mode = "keyword"
                fallback = f"keyword search only: {problem} (run: memory-console reindex)"
            common.log.debug(
                "scan kernel: %s over %s vectors",
                semantic.index.scan_kernel,
                f"{semantic.loaded:,}",
            )
        memory_filter = MemoryFilter(
            owner=args.owner,
            namespace=args.namespace,
            topic=args.topic,
            status=args.status,
            tiers=tuple(dict.fromkeys(args.tier)) if args.tier else None,
            session_id=args.session,
        )
        hits = engine.search(
            args.query, mode=mode, k=args.k, memory_filter=memory_filter, now=common.now_of(args)
        )
    finally:
        store.close()
    if fallback is None and args.mode != "keyword":
        fallback = engine.fallback
    if fallback is not None:
        common.log.warning("%s", fallback)  # on stderr, above the results
    if args.json:
        common.print_json(
            {
                "query": args.query,
                "mode": mode,
                "fallback": fallback,
                "hits": [
                    {
                        "id": hit.record.id,
                        "title": render.memory_json(hit.record, reveal=args.reveal)["title"],
                        "score": round(hit.score, 6),
                        **hit.breakdown(),
                    }
                    for hit in hits
                ],
            }
        )
    else:
        render.print_hits(hits, mode, reveal=args.reveal)
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    from memory_console.embed.embedder import why_replaced

    store = common.open_store(args, write="reindex")
    started = time.perf_counter()
    try:
        semantic = load_semantic(
            store, args.model_manifest or common.settings_of(args).model_manifest
        )
        with common.progress("embedding") as update:
            embedded = semantic.sync(update)
        indexed = len(semantic.index)
    finally:
        store.close()
    seconds = time.perf_counter() - started
    replaced = [
        {"model_id": model, "vectors": count, "why": why_replaced(model)}
        for model, count in sorted(semantic.replaced.items())
    ]
    if args.json:
        common.print_json(
            {
                "model_id": semantic.model_id,
                "embedded": embedded,
                "indexed": indexed,
                "seconds": round(seconds, 2),
                "replaced": replaced,
            }
        )
    else:
        for item in replaced:
            print(f"replaced {item['vectors']:,} vectors of {item['model_id']}: {item['why']}")
        print(
            f"embedded {embedded:,} memories with {semantic.model_id}; "
            f"{indexed:,} in the index ({seconds:.1f} s)"
        )
    return 0

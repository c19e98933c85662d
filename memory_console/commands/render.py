"""How the CLI shows memories, events, forecasts and figures: JSON shapes and rich tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_console.commands.common import console
from memory_console.confidence_words import confidence_label
from memory_console.describe import change_text, created_note, evaluated_note, forecast_line
from memory_console.literal import literal
from memory_console.sensitive import (
    mask,
    mask_keywords,
    mask_record,
    mask_value,
    secret_words,
)
from memory_console.store import EventRecord, MemoryRecord
from memory_console.store.wire import export_record
from memory_console.timeutil import to_date, to_iso

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


def memory_json(
    record: MemoryRecord,
    *,
    reveal: bool = False,
    supersedes: list[int] | None = None,
    confidence_now: float | None = None,
) -> dict[str, Any]:
    """A memory as `list`/`show --json` print it: the export fields plus the confidence label
    (and, when given, the confidence a decay run now would set and the ids it supersedes);
    credentials masked in every text (title, content, keywords, metadata) unless reveal."""
    data = export_record(record)
    if not reveal:
        data = mask_record(data)
    data["confidence_label"] = confidence_label(record.confidence, record.source)
    if confidence_now is not None:
        data["confidence_now"] = round(confidence_now, 4)
    if supersedes is not None:
        data["supersedes"] = supersedes
    return data


def link_lines(record: MemoryRecord, supersedes: list[int] | None) -> list[str]:
    """`superseded by #N` / `supersedes #M`: the memory's place in a fact that changed."""
    lines = []
    if record.superseded_by is not None:
        lines.append(f"superseded by #{record.superseded_by}")
    if supersedes:
        lines.append("supersedes " + ", ".join(f"#{ident}" for ident in supersedes))
    return lines


def shown_keywords(record: MemoryRecord) -> list[str]:
    """The keywords as the CLI shows them: a word of a secret masked."""
    words = secret_words(record.title, record.content)
    return [mask(k) for k in mask_keywords(record.keywords, words)]


def event_json(event: EventRecord, *, reveal: bool = False) -> dict[str, Any]:
    """An event as `show --json` prints it; the texts it holds masked unless reveal."""
    data = {"id": event.id, **event.as_json()}
    return data if reveal else mask_value(data)


def forecast_json(record: MemoryRecord, now: float, params: Any = None) -> dict[str, Any]:
    # Imported here: the maintenance package (a third of a second) is not needed to search.
    from memory_console.maintenance.forecast import memory_forecast

    forecast = memory_forecast(record, now, params=params)
    return {
        "policy": forecast.policy,
        "points": [
            {"at": to_iso(at), "confidence": round(value, 4)} for at, value in forecast.points
        ],
        "reaches_floor_at": to_iso(forecast.floor_date),
        "action": forecast.action,
        "action_at": to_iso(forecast.action_date),
    }


def confidence_cell(value: float, source: str | None = None, now: float | None = None) -> str:
    """`0.85 high confidence`; with the value a decay run now would set, where it differs:
    `0.33 uncertain now (0.85 stored)`."""
    if now is None or round(now, 2) == round(value, 2):
        return f"{value:.2f} {confidence_label(value, source)}"
    return f"{now:.2f} {confidence_label(now, source)} now ({value:.2f} stored)"


def confidence_field(record: MemoryRecord, now: float) -> str:
    """`0.33 uncertain now (0.85 stored, base 0.85)`, or `0.85 high confidence (base 0.85)`."""
    cell = confidence_cell(record.confidence, record.source, now)
    base = f"base {record.base_confidence:.2f}"
    return f"{cell[:-1]}, {base})" if cell.endswith(" stored)") else f"{cell} ({base})"


def short_confidence(value: float, now: float | None) -> str:
    """`0.85` or, when decay would lower it now, `0.85→0.33` (stored, then as of now)."""
    if now is None or round(now, 2) == round(value, 2):
        return f"{value:.2f}"
    return f"{value:.2f}→{now:.2f}"


def memories(count: int) -> str:
    """`1 memory`, `2,000 memories`."""
    return f"{count:,} {'memory' if count == 1 else 'memories'}"


def print_memory_table(
    rows: list[MemoryRecord],
    *,
    more: bool = False,
    reveal: bool = False,
    out: Console | None = None,
    now_values: list[float] | None = None,
) -> None:
    """A table of memories; narrow terminals drop the less telling columns, never the title.
    `now_values`: each memory's confidence as a decay run now would set it (shown beside the
    stored value where it differs)."""
    from rich.table import Table

    out = out or console()
    wide = out.width >= 120
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("id", justify="right", no_wrap=True)
    if wide:
        table.add_column("owner/topic", no_wrap=True, max_width=28, overflow="ellipsis")
        table.add_column("type", no_wrap=True)
    table.add_column("title", ratio=1, overflow="fold")
    table.add_column("confidence", no_wrap=True)
    table.add_column("ret", justify="right", no_wrap=True)
    if wide:
        table.add_column("last access", no_wrap=True)
        table.add_column("status", no_wrap=True)
    nows: list[float | None] = list(now_values) if now_values is not None else [None] * len(rows)
    for record, now in zip(rows, nows, strict=True):
        title = ("🔒 " if record.is_protected else "") + (
            record.title if reveal else mask(record.title)
        )
        cell = literal(title)
        if record.status != "active" and not wide:
            cell.append(f" ({record.status})", style="dim")
        confidence = (
            confidence_cell(record.confidence, record.source, now)
            if wide
            else short_confidence(record.confidence, now)
        )
        cells: list[str | Text] = [str(record.id)]
        if wide:
            cells += [f"{record.owner}/{record.topic}", record.memory_type]
        cells += [cell, confidence, str(record.retrieval_count)]
        if wide:
            cells += [to_date(record.last_accessed_at) or "never", record.status]
        table.add_row(*cells)
    out.print(table)
    if more:
        out.print(f"showing the first {len(rows)}; use --limit or filters for more", style="dim")


def print_memory(
    record: MemoryRecord,
    history: list[EventRecord],
    now: float,
    *,
    accesses: list[EventRecord] | None = None,
    params: Any = None,
    reveal: bool = False,
    supersedes: list[int] | None = None,
) -> None:
    from rich.table import Table

    from memory_console.maintenance.forecast import confidence_now

    def shown(text: str) -> str:
        return text if reveal else mask(text)

    out = console()
    out.print(f"#{record.id} {shown(record.title)}", style="bold")
    out.print(shown(record.content))
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="dim")
    fields.add_column()
    for name, value in (
        ("owner / topic", f"{record.owner} / {record.topic}"),
        *([("namespace", record.namespace)] if record.namespace else []),
        ("type / tier", f"{record.memory_type} / {record.tier}"),
        ("confidence", confidence_field(record, confidence_now(record, now, params))),
        ("importance", f"{record.importance:.2f}"),
        ("retrievals", str(record.retrieval_count)),
        ("created", (to_iso(record.created_at) or "") + created_note(record, history)),
        ("last access", to_iso(record.last_accessed_at) or "never"),
        ("decay policy", record.decay_policy + ("  protected" if record.is_protected else "")),
        (
            "status",
            ", ".join(
                [
                    record.status
                    + (f" into #{record.consolidated_into}" if record.consolidated_into else ""),
                    *link_lines(record, supersedes),
                ]
            ),
        ),
        ("source", record.source),
        ("keywords", ", ".join(record.keywords if reveal else shown_keywords(record))),
        ("forecast", forecast_line(record, now, params)),
    ):
        fields.add_row(name, value or "")
    out.print(fields)
    events = Table(title="history", show_edge=False, header_style="bold", title_justify="left")
    for name in ("at", "actor", "kind", "change"):
        events.add_column(name)
    for event in history:
        change = shown(change_text(event)) + evaluated_note(event)
        events.add_row(to_iso(event.at), event.actor, event.kind, change)
    out.print(events)
    if accesses is not None:
        log = Table(title="accesses", show_edge=False, header_style="bold", title_justify="left")
        for name in ("at", "query", "scores"):
            log.add_column(name)
        for event in accesses:
            scores = ", ".join(f"{k} {v}" for k, v in (event.scores or {}).items())
            log.add_row(to_iso(event.at), shown(event.query or ""), scores)
        out.print(log)


def print_stats(figures: dict[str, Any]) -> None:
    from rich.table import Table

    out = console()
    head = literal(f"{figures['total']:,} memories", style="bold")
    head.append(f" (evaluated at {to_iso(figures['now'])})")
    out.print(head)
    tiers = Table(
        title="confidence tiers (active, by confidence as of now)",
        show_edge=False,
        title_justify="left",
    )
    for name in ("tier", "count", "mean"):
        tiers.add_column(name, justify="right" if name != "tier" else "left")
    for name, value in figures["confidence_tiers_now"].items():
        mean = value["mean"]
        tiers.add_row(name, f"{value['count']:,}", f"{mean:.3f}" if mean is not None else "-")
    out.print(tiers)
    stale, recent, age = figures["stale"], figures["recently_accessed"], figures["age_days"]
    out.print(f"stale (standard policy, no access for {stale['days']}+ days): {stale['count']:,}")
    out.print(
        f"accessed in the last {recent['days']} days: {recent['count']:,}"
        f" (mean retrievals {recent['mean_retrievals'] or 0})"
    )
    out.print(f"age in days: min {age['min']}, mean {age['mean']}, max {age['max']}")
    total = max(1, sum(age["histogram"].values()))
    for name, count in age["histogram"].items():
        bar = "█" * round(40 * count / total)
        out.print(f"  {name:>13} {count:>9,} {bar}")
    for field, values in figures["counts"].items():
        listed = ", ".join(f"{k} {v:,}" for k, v in values.items())
        out.print(f"by {field.replace('memory_type', 'type')}: {listed}")


def print_hits(hits: list[Any], mode: str, *, reveal: bool = False) -> None:
    """Search results with why each ranked where it did."""
    from rich.table import Table

    table = Table(
        show_edge=False,
        header_style="bold",
        title=f"{len(hits)} hits ({mode})",
        title_justify="left",
    )
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("title", ratio=1, overflow="fold")
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("matched by", no_wrap=True)
    table.add_column("cosine", justify="right", no_wrap=True)
    table.add_column("relevance", no_wrap=True)
    for hit in hits:
        parts = []
        if hit.keyword_rank is not None:
            parts.append(f"keyword #{hit.keyword_rank}")
        if hit.semantic_rank is not None:
            parts.append(f"semantic #{hit.semantic_rank}")
        table.add_row(
            str(hit.record.id),
            hit.record.title if reveal else mask(hit.record.title),
            f"{hit.score:.4f}",
            ", ".join(parts),
            f"{hit.cosine:.3f}" if hit.cosine is not None else "",
            hit.relevance,
        )
    console().print(table)

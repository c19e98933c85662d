"""A plain reference of the secret masking, to compare the fast path with."""

from __future__ import annotations

from typing import Any

from memory_console.sensitive import (
    MAX_MASK_ROUNDS,
    WORD,
    Finding,
    mask_keywords,
    masked_spans,
    scan_credentials,
)


def reference_find(text: str) -> list[Finding]:
    """find_sensitive(text, health=False) with every pattern run on every text."""
    return sorted(scan_credentials(text), key=lambda f: f.start)


def reference_mask(text: str) -> str:
    spans = reference_find(text)
    for _ in range(MAX_MASK_ROUNDS):
        if not spans:
            return text
        text = masked_spans(text, spans)
        spans = reference_find(text)
    return text


def reference_mask_value(value: Any) -> Any:
    if isinstance(value, str):
        return reference_mask(value)
    if isinstance(value, dict):
        return {reference_mask(str(k)): reference_mask_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [reference_mask_value(item) for item in value]
    return value


def reference_mask_record(data: dict[str, Any]) -> dict[str, Any]:
    words: set[str] = set()
    for text in (str(data.get("title") or ""), str(data.get("content") or "")):
        for finding in reference_find(text):
            words.update(WORD.findall(text[finding.start : finding.end].lower()))
    masked = reference_mask_value(data)
    if isinstance(masked.get("keywords"), list):
        masked["keywords"] = mask_keywords(masked["keywords"], words)
    return masked

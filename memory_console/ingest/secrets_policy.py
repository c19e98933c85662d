"""Import's refusal of credentials, and of health data the user did not ask to keep."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory_console.sensitive import credential_kinds, has_health_data, with_article

# Where an import event tuple keeps text: actor, before JSON, after JSON, query, scores JSON.
EVENT_TEXTS = (1, 3, 4, 6, 7)
EVENT_JSON = (3, 4, 7)


@dataclass(frozen=True, slots=True)
class SecretsPolicy:
    """What an import may keep: credentials only with allow_secrets; health data when the
    memory's metadata.user_requested is true, or with allow_health."""

    allow_secrets: bool = False
    allow_health: bool = False


def event_values(history: Sequence[Sequence[Any]] | None) -> list[Any]:
    """The texts an import's event tuples hold, JSON ones decoded."""
    values: list[Any] = []
    for event in history or ():
        for position in EVENT_TEXTS:
            value = event[position]
            if position in EVENT_JSON and isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            values.append(value)
    return values


def import_refusal(
    row: dict[str, Any], history: Sequence[Sequence[Any]] | None, policy: SecretsPolicy
) -> str | None:
    """Why an import must not keep this checked row (with its history), or None.

    Credentials are looked for in every text of the memory (title, content, keywords,
    metadata, history), health data in what the memory says (title, content, keywords)."""
    keywords = json.loads(row["keywords"])
    metadata = json.loads(row["metadata"])
    if not policy.allow_secrets:
        texts = [row["title"], row["content"], keywords, metadata, event_values(history)]
        kinds = credential_kinds(texts)
        if kinds:
            named = " and ".join(with_article(kind) for kind in kinds)
            return f"holds {named} (import with --allow-secrets to keep it)"
    if not policy.allow_health and metadata.get("user_requested") is not True:
        if has_health_data(row["title"], row["content"], *keywords):
            return (
                "holds health data and its metadata.user_requested is not true "
                "(import with --allow-health to keep it)"
            )
    return None

"""One frozen settings object, built at start-up from a TOML file and MEMORY_CONSOLE_* variables."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

APP_NAME = "memory-console"
ENV_PREFIX = "MEMORY_CONSOLE_"


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the store is and how the console behaves; nothing here touches the disk."""

    db: Path | None = None
    read_only: bool = False
    theme: str = "textual-dark"
    model_manifest: Path | None = None
    merge_command: str | None = None
    page_size: int = 100

    def with_overrides(self, **values: Any) -> Settings:
        return replace(self, **{k: v for k, v in values.items() if v is not None})


def config_dir() -> Path:
    from platformdirs import user_config_dir

    return Path(os.environ.get(ENV_PREFIX + "CONFIG_DIR") or user_config_dir(APP_NAME))


def data_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(os.environ.get(ENV_PREFIX + "DATA_DIR") or user_data_dir(APP_NAME))


def default_db_path() -> Path:
    """The user's default store, by platform convention (created only when first needed)."""
    return data_dir() / "memories.db"


def truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def load_settings() -> Settings:
    """Settings from config.toml (if any), then MEMORY_CONSOLE_* variables over it."""
    values: dict[str, Any] = {}
    path = config_dir() / "config.toml"
    if path.is_file():
        with path.open("rb") as handle:
            try:
                values.update(tomllib.load(handle))
            except tomllib.TOMLDecodeError as error:
                raise ValueError(f"{path}: {error}") from error
    env = os.environ
    for name in ("db", "theme", "model_manifest", "merge_command", "read_only", "page_size"):
        if ENV_PREFIX + name.upper() in env:
            values[name] = env[ENV_PREFIX + name.upper()]
    known = set(Settings.__dataclass_fields__)
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"{path}: unknown settings: {', '.join(sorted(unknown))}")
    for name in ("db", "model_manifest"):
        if values.get(name):
            values[name] = Path(str(values[name])).expanduser()
    if isinstance(values.get("read_only"), str):
        values["read_only"] = truthy(values["read_only"])
    if "page_size" in values:
        values["page_size"] = int(values["page_size"])
    return Settings(**values)


def resolve_db(cli_db: str | None, settings: Settings) -> Path:
    """--db, else MEMORY_CONSOLE_DB / config, else the user's data directory."""
    if cli_db:
        return Path(cli_db).expanduser()
    if settings.db is not None:
        return settings.db
    return default_db_path()

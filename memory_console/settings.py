"""One frozen settings object, built at start-up from a TOML file and MEMORY_CONSOLE_* variables."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memory_console.store.postgres import foreign_location, is_url

APP_NAME = "memory-console"
ENV_PREFIX = "MEMORY_CONSOLE_"


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the store is and how the console behaves; nothing here touches the disk."""

    db: Path | str | None = None  # a file, or a PostgreSQL URL (kept as given)
    read_only: bool = False
    theme: str = "textual-dark"
    model_manifest: Path | None = None
    merge_command: str | None = None
    merge_timeout: float = 60.0  # seconds the merge command has for one question
    merge_budget: float = 600.0  # seconds it has for every question of one apply or review
    page_size: int = 100
    # Megabytes of the vector index file a search keeps mapped; a larger file has each
    # scanned chunk's pages dropped after it is scored. None: every page stays while the
    # machine has room (the kernel reclaims them under pressure, as any file's cache).
    vector_memory_mb: int | None = None

    def with_overrides(self, **values: Any) -> Settings:
        return replace(self, **{k: v for k, v in values.items() if v is not None})


def config_dir() -> Path:
    """MEMORY_CONSOLE_CONFIG_DIR, else the platform's config directory for the app."""
    from platformdirs import user_config_dir

    return directory_variable("CONFIG_DIR") or Path(user_config_dir(APP_NAME))


def data_dir() -> Path:
    """MEMORY_CONSOLE_DATA_DIR, else the platform's data directory for the app."""
    from platformdirs import user_data_dir

    return directory_variable("DATA_DIR") or Path(user_data_dir(APP_NAME))


def default_db_path() -> Path:
    """The user's default store, by platform convention (created only when first needed)."""
    return data_dir() / "memories.db"


TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off", "")
MAX_PAGE_SIZE = 100_000
MAX_MERGE_SECONDS = 86_400.0  # a day: a merge budget or timeout beyond is a typing mistake
# Every setting, with what it holds (for the one-line error about a bad value).
SETTING_KINDS = {
    "db": "a path",
    "read_only": "true or false",
    "theme": "a theme name",
    "model_manifest": "a path",
    "merge_command": "a command line",
    "merge_timeout": "seconds, more than 0 and at most 86,400",
    "merge_budget": "seconds, more than 0 and at most 86,400",
    "page_size": f"a whole number from 1 to {MAX_PAGE_SIZE:,}",
    "vector_memory_mb": "a whole number of megabytes, 0 or more",
}


class SettingsError(ValueError):
    """A bad settings value; the message names the variable or the file and key."""


def truthy(value: str) -> bool:
    return value.strip().lower() in TRUE_WORDS


def directory_variable(name: str) -> Path | None:
    """MEMORY_CONSOLE_<name> as a directory path, None when unset or empty; a path that
    exists and is not a directory is an error naming the variable."""
    raw = os.environ.get(ENV_PREFIX + name, "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        raise SettingsError(f"{ENV_PREFIX + name}={raw!r}: not a directory")
    return path


def parse_setting(name: str, value: Any, source: str) -> Any:
    """One setting's value from `source` (a variable, or a file and key) as Settings holds it."""
    from shlex import split

    wrong = f"{source}={value!r}: expected {SETTING_KINDS[name]}"
    if name == "read_only":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
            return truthy(value)
        raise SettingsError(f"{wrong} (1/0, true/false, yes/no, on/off)")
    if name in ("page_size", "vector_memory_mb"):
        try:
            number = int(str(value).strip()) if not isinstance(value, bool | float) else None
        except ValueError:
            number = None
        low, high = (1, MAX_PAGE_SIZE) if name == "page_size" else (0, 2**40)
        if number is None or not low <= number <= high:
            raise SettingsError(wrong)
        return number
    if name in ("merge_timeout", "merge_budget"):
        try:
            seconds = float(str(value).strip()) if not isinstance(value, bool) else None
        except ValueError:
            seconds = None
        if seconds is None or not 0 < seconds <= MAX_MERGE_SECONDS:  # NaN fails too
            raise SettingsError(wrong)
        return seconds
    if not isinstance(value, str):
        raise SettingsError(wrong)
    if name == "db" and is_url(value.strip()):
        return value.strip()
    if name == "db" and (foreign := foreign_location(value.strip())) is not None:
        raise SettingsError(f"{source}: {foreign}")
    if name in ("db", "model_manifest"):
        return Path(value).expanduser() if value.strip() else None
    if name == "merge_command" and value.strip():
        try:
            split(value)
        except ValueError as error:
            raise SettingsError(f"{wrong}: {error}") from error
    return value.strip() and value or None


def settings_file() -> Path:
    return config_dir() / "config.toml"


TOP_LEVEL_KEY = r"^[ \t]*(?:{name}|\"{name}\"|'{name}')[ \t]*="


def save_setting(name: str, value: str) -> Path:
    """Write one string setting into config.toml (created when missing), keeping every other
    line as it was: the key's line is replaced, or the key is added before the first table.
    The value is checked as load_settings checks it; the file is replaced atomically, so a
    failed write leaves the old one. Returns the file's path."""
    import json
    import re
    import tempfile

    parse_setting(name, value, f"{settings_file()}: {name}")
    path = settings_file()
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    line = f"{name} = {json.dumps(value, ensure_ascii=False)}"  # a TOML basic string
    lines = text.splitlines()
    key = re.compile(TOP_LEVEL_KEY.format(name=re.escape(name)))
    table = next((i for i, old in enumerate(lines) if old.lstrip().startswith("[")), len(lines))
    found = next((i for i, old in enumerate(lines[:table]) if key.match(old)), None)
    if found is not None:
        lines[found] = line
    else:
        lines.insert(table, line)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".config.", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o777)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return path


def load_settings() -> Settings:
    """Settings from config.toml (if any), then MEMORY_CONSOLE_* variables over it; a bad
    value is a one-line SettingsError naming its variable, or the file and key."""
    values: dict[str, Any] = {}
    path = settings_file()
    if path.is_file():
        with path.open("rb") as handle:
            try:
                from_file = tomllib.load(handle)
            except tomllib.TOMLDecodeError as error:
                raise SettingsError(f"{path}: {error}") from error
        unknown = set(from_file) - set(SETTING_KINDS)
        if unknown:
            raise SettingsError(
                f"{path}: unknown settings: {', '.join(sorted(unknown))} "
                f"(known: {', '.join(SETTING_KINDS)})"
            )
        for name, value in from_file.items():
            values[name] = parse_setting(name, value, f"{path}: {name}")
    for name in SETTING_KINDS:
        variable = ENV_PREFIX + name.upper()
        if variable in os.environ:
            values[name] = parse_setting(name, os.environ[variable], variable)
    settings = Settings(**{name: value for name, value in values.items() if value is not None})
    global _vector_memory
    _vector_memory = settings.vector_memory_mb
    return settings


_UNREAD: Any = object()
_vector_memory: int | None = _UNREAD  # as load_settings read it (the CLI and console)


def vector_memory_bytes() -> int | None:
    """The vector index's memory budget in bytes (None: no budget), as the settings say:
    read by load_settings, else (a program using the library) from the variable."""
    global _vector_memory
    if _vector_memory is _UNREAD:
        variable = ENV_PREFIX + "VECTOR_MEMORY_MB"
        raw = os.environ.get(variable)
        _vector_memory = parse_setting("vector_memory_mb", raw, variable) if raw else None
    return None if _vector_memory is None else _vector_memory * 2**20


def resolve_db(cli_db: str | None, settings: Settings) -> Path | str:
    """--db, else MEMORY_CONSOLE_DB / config, else the user's data directory: a file's path,
    or a PostgreSQL URL as given."""
    if cli_db:
        foreign = foreign_location(cli_db)
        if foreign is not None:
            raise SettingsError(f"--db: {foreign}")
        return cli_db if is_url(cli_db) else Path(cli_db).expanduser()
    if settings.db is not None:
        return settings.db
    return default_db_path()

"""What a refused setting is told: one line naming the setting by its environment name, what is wrong with its
value, and a valid example. Kept beside `chronicle/settings.py`, which only defines and validates."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from chronicle.settings import Settings
from chronicle.settings_checks import _toml_path, env_names, field_of, flat_keys

SETTING_EXAMPLES: dict[str, str] = {
    "timezone": "CHRONICLE_TIMEZONE=Asia/Shanghai",
    "project_timezones": """CHRONICLE_PROJECT_TIMEZONES='{"XH305": "Europe/Berlin"}'""",
    "column_map": """CHRONICLE_COLUMN_MAP='{"time": "ts", "text": "content"}'""",
    "catalog": "CHRONICLE_CATALOG=ducklake:postgres:dbname=chronicle host=db",
    "duckdb_path": "CHRONICLE_DUCKDB_PATH=/data/chronicle.duckdb",
    "source_paths": """CHRONICLE_SOURCE_PATHS='["/data/logs"]'""",
    "protected_files": """CHRONICLE_PROTECTED_FILES='["SOUL.md"]'""",
    "overwrite_allowed_files": """CHRONICLE_OVERWRITE_ALLOWED_FILES='["MEMORY.md"]'""",
    "extra_patterns": """CHRONICLE_REDACT_EXTRA_PATTERNS='["XH-\\d+"]'""",
}
"""A valid value to show next to a refused one (fields not listed get `NAME=<a valid value>` with their default)."""


def _path(loc: tuple[Any, ...]) -> tuple[str | None, str]:
    """(section, field) of an error's location (`("llm", "concurrency")`, `("timezone",)`)."""
    if len(loc) > 1 and str(loc[0]) in Settings.sections():
        return str(loc[0]), str(loc[1])
    return None, str(loc[0])


def _env_name(path: tuple[str | None, str]) -> str:
    return env_names(Settings).get(path, (f"CHRONICLE_{path[1].upper()}",))[0]


SETTINGS_ERRORS: tuple[type[Exception], ...] = (ValidationError, SettingsError, tomllib.TOMLDecodeError)
"""What building `Settings` raises for a bad value: a refused value, an undecodable JSON value, a broken TOML file."""


def settings_problem(exc: Exception) -> str:
    """One line naming each refused setting (by its environment name), what is wrong, and a valid example."""
    if isinstance(exc, tomllib.TOMLDecodeError):
        return f"settings file {_toml_path()} is not valid TOML: {exc}"
    if not isinstance(exc, ValidationError):
        match = re.search(r'field "(\w+)"', str(exc))
        path = flat_keys(Settings).get(match.group(1) if match else "?", (None, "?"))
        example = SETTING_EXAMPLES.get(path[1])
        return (f"setting {_env_name(path)}: not valid JSON" + (f" (valid example: {example})" if example else ""))
    parts = []
    for error in exc.errors():
        loc = error.get("loc") or ("?",)
        path = _path(tuple(loc))
        name = _env_name(path)
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        info = field_of(Settings, path)
        example = SETTING_EXAMPLES.get(path[1])
        if example is None and info is not None and info.default is not None and not callable(info.default):
            example = f"{name}={info.default}"
        detail = f"setting {name}: {message}" + (f" (valid example: {example})" if example else "")
        if detail not in parts:
            parts.append(detail)
    return "; ".join(parts)

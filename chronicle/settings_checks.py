"""Where `Settings` reads its values from, and the checks of the values that need more than a type: a field
validator here names the variable and what a valid value looks like (`chronicle/settings_errors.py` turns
pydantic's error into that one line). Kept apart from `chronicle/settings.py`, which declares the fields."""

from __future__ import annotations

import os
import re
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, TomlConfigSettingsSource


def mask_conninfo(text: str) -> str:
    """A conninfo / URI with its password replaced by `****` (`password=...` or `user:pw@host`)."""
    # An unquoted value ends at a space; a quote right before that space (or before `:`) closes the string the
    # conninfo was quoted in inside an error message (`"host=h password=pw": Unable to connect`) and is kept.
    value = r"""'(?:[^'\\]|\\.)*'|\S+?(?=["']?(?:\s|$)|["']:)"""
    text = re.sub(rf"(password\s*=\s*)({value})", r"\1****", text, flags=re.I)
    return re.sub(r"(://[^:/@\s]+:)[^@\s]+@", r"\1****@", text)


def _zone_or_raise(value: str) -> None:
    """A ValueError (which pydantic reports against the setting) for a name that is no IANA zone: ZoneInfo's own
    ZoneInfoNotFoundError is a KeyError, which pydantic lets through as a traceback."""
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ValueError(f"{value!r} is not an IANA time zone name") from None


def _toml_path() -> Path:
    # The only environment read outside the settings fields: where the settings file itself is.
    return Path(os.environ.get("CHRONICLE_CONFIG", "chronicle.toml"))


class CheckedSettings(BaseSettings):
    """The sources and value checks of `Settings` (the fields are declared there)."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=_toml_path())
        return (init_settings, env_settings, dotenv_settings, toml, file_secret_settings)

    @field_validator("catalog", check_fields=False)
    @classmethod
    def _valid_catalog(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not value.startswith("ducklake:postgres:"):
            raise ValueError("CHRONICLE_CATALOG must be `ducklake:postgres:<libpq conninfo>` (or unset for the "
                             f"embedded DuckDB file); got {mask_conninfo(value)!r}. "
                             "MotherDuck (`md:`) is not supported")
        return value

    @field_validator("duckdb_path", check_fields=False)
    @classmethod
    def _not_motherduck(cls, value: Path | None) -> Path | None:
        if value is not None and str(value).startswith("md:"):
            raise ValueError("MotherDuck (`md:`) is not supported: CHRONICLE_DUCKDB_PATH is a local file. For many "
                             "writers use CHRONICLE_CATALOG=ducklake:postgres:<conninfo> with CHRONICLE_DATA_PATH")
        return value

    @field_validator("timezone", check_fields=False)
    @classmethod
    def _valid_tz(cls, value: str) -> str:
        _zone_or_raise(value)
        return value

    @field_validator("project_timezones", check_fields=False)
    @classmethod
    def _valid_project_tzs(cls, value: dict[str, str]) -> dict[str, str]:
        for project, zone in value.items():
            try:
                _zone_or_raise(zone)
            except ValueError as exc:
                raise ValueError(f"project {project!r}: {exc}") from None
        return value

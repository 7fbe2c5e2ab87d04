"""Where `Settings` reads its values from, and the checks of the values that need more than a type: a field
validator here names the variable and what a valid value looks like (`chronicle/settings_errors.py` turns
pydantic's error into that one line). Kept apart from `chronicle/settings.py` and `chronicle/settings_sections.py`,
which declare the fields.

Every source is read into the same nested shape before the sources are merged, so a flat name (`LLM_URL`,
`CHRONICLE_REPORT_MAX_CHARS`, `llm_url=` in `chronicle.toml` or as a keyword) and a section's own (`[llm] url`)
are one setting, and the usual priority holds: keywords, environment, `.env`, `chronicle.toml`, defaults."""

from __future__ import annotations

import json
import os
import re
import tomllib
import warnings
from functools import cache
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dotenv import dotenv_values
from pydantic import BaseModel, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsError


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


Path_ = tuple[str | None, str]
"""Where a setting lives: (section or None for the root, field)."""


def section_model(annotation: Any) -> type[BaseModel] | None:
    """The section class a field of `Settings` is annotated with, None for a root setting."""
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def field_of(settings_cls: type[BaseModel], path: Path_) -> FieldInfo | None:
    """The declaration of the setting at `path`, None when there is no such setting."""
    section, field = path
    model = settings_cls if section is None else section_model(
        getattr(settings_cls.model_fields.get(section), "annotation", None))
    return None if model is None else model.model_fields.get(field)


def _place(out: dict[str, Any], path: Path_, value: Any) -> None:
    section, field = path
    if section is None:
        out[field] = value
    else:
        out.setdefault(section, {})[field] = value


@cache
def env_names(settings_cls: type[BaseModel]) -> dict[Path_, tuple[str, ...]]:
    """Each setting's environment names, the documented one first: its `env(...)` names, else the section's
    prefix + the field's name (`CHRONICLE_` + the name for a root field)."""
    names: dict[Path_, tuple[str, ...]] = {}
    for name, info in settings_cls.model_fields.items():
        section = section_model(info.annotation)
        if section is None:
            names[(None, name)] = (f"CHRONICLE_{name.upper()}",)
            continue
        for field, finfo in section.model_fields.items():
            choices = getattr(finfo.validation_alias, "choices", None)
            names[(name, field)] = tuple(choices) if choices else (f"{section.ENV_PREFIX}{field.upper()}",)
    return names


@cache
def flat_keys(settings_cls: type[BaseModel]) -> dict[str, Path_]:
    """The flat spelling of every setting (its environment names without `CHRONICLE_`, lower case): what keyword
    arguments and `chronicle.toml`'s top-level keys have always been called (`llm_url`, `report_max_chars`)."""
    return {env.removeprefix("CHRONICLE_").lower(): path
            for path, envs in env_names(settings_cls).items() for env in envs}


def _is_complex(annotation: Any) -> bool:
    """A list or dict setting, written as JSON in the environment (as pydantic-settings does)."""
    if get_origin(annotation) in (Union, UnionType):
        return any(_is_complex(arg) for arg in get_args(annotation) if arg is not type(None))
    return get_origin(annotation) in (list, dict) or annotation in (list, dict)


def _decoded(settings_cls: type[BaseModel], path: Path_, raw: str, flat: str) -> Any:
    if not _is_complex(field_of(settings_cls, path).annotation):  # type: ignore[union-attr]
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        raise SettingsError(f'error parsing value for field "{flat}" from source "env"') from None


def nest(settings_cls: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """`values` keyed by flat names, sections or root fields, in the nested shape `Settings` validates."""
    keys = flat_keys(settings_cls)
    out: dict[str, Any] = {}
    for key, value in values.items():
        if section_model(getattr(settings_cls.model_fields.get(key), "annotation", None)) and isinstance(value, dict):
            out.setdefault(key, {}).update(value)
        elif (path := keys.get(key.lower())) is not None and path[0] is not None:
            _place(out, path, value)
        else:
            out[key] = value
    return out


RETIRED = {
    "CHRONICLE_CHRONICLE_CONTEXT_TOKENS": "services/history.py CONTEXT_TOKENS",
    "CHRONICLE_DISTILL_CHUNK_CHARS": "chronicle/distill/chunks.py CHUNK_CHARS",
    "CHRONICLE_KNOWLEDGE_DAILY_CAP": "chronicle/distill/gate.py DAILY_CAP",
}
"""Variables that were settings and are now constants of the one module that uses them (bench-tuned internals)."""


class _FlatSource(PydanticBaseSettingsSource):
    """One environment-like source (the process environment, `.env`) read by every setting's names."""

    def __init__(self, settings_cls: type[BaseSettings], variables: dict[str, str | None]) -> None:
        super().__init__(settings_cls)
        self.variables = {k.upper(): v for k, v in variables.items() if v is not None}

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ reads every setting at once

    def __call__(self) -> dict[str, Any]:
        for name in RETIRED.keys() & self.variables.keys():
            warnings.warn(f"{name} is no longer read: the value is fixed in {RETIRED[name]}", stacklevel=2)
        found: dict[str, Any] = {}
        for path, envs in env_names(self.settings_cls).items():
            env = next((e for e in envs if e in self.variables), None)
            if env is not None:
                _place(found, path, _decoded(self.settings_cls, path, self.variables[env],
                                             env.removeprefix("CHRONICLE_").lower()))
        return found


class _TomlSource(PydanticBaseSettingsSource):
    """`chronicle.toml` (or `$CHRONICLE_CONFIG`): flat keys and `[section]` tables."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError

    def __call__(self) -> dict[str, Any]:
        path = _toml_path()
        if not path.is_file():
            return {}
        with path.open("rb") as fh:
            return nest(self.settings_cls, tomllib.load(fh))


class CheckedSettings(BaseSettings):
    """The sources and value checks of `Settings` (the fields are declared there and in the sections)."""

    def __init__(self, **values: Any) -> None:
        super().__init__(**nest(type(self), values))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        env_file = Path(".env")
        dotenv = dotenv_values(env_file) if env_file.is_file() else {}
        return (init_settings, _FlatSource(settings_cls, dict(os.environ)), _FlatSource(settings_cls, dotenv),
                _TomlSource(settings_cls))

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


def check_catalog(cls: type, value: str | None) -> str | None:
    """`LakeSettings.catalog`: a DuckLake on PostgreSQL, or None (an empty value included) for the embedded file."""
    if value is None or not value.strip():
        return None
    if not value.startswith("ducklake:postgres:"):
        raise ValueError("CHRONICLE_CATALOG must be `ducklake:postgres:<libpq conninfo>` (or unset for the "
                         f"embedded DuckDB file); got {mask_conninfo(value)!r}. "
                         "MotherDuck (`md:`) is not supported")
    return value

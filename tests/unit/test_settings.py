"""Settings nested by component still read every name an operator may have exported or written.

ENV_NAMES is frozen: the environment names the flat class read before the sections existed. Each one must still
reach its field, from the environment, from `.env`, as a flat `chronicle.toml` key and as a keyword argument;
a section's own spelling (`[llm] url`, `CHRONICLE_LLM_URL`) is the same setting, with the usual priority.
"""

from __future__ import annotations

import json
import os
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from chronicle.settings import Settings
from chronicle.settings_checks import RETIRED, env_names, field_of, flat_keys
from chronicle.settings_errors import settings_problem

ENV_NAMES = (
    "AWS_ACCESS_KEY_ID", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_SECRET_ACCESS_KEY",
    "CHRONICLE_ALERT_BLOCK", "CHRONICLE_ALERT_WEBHOOK_URL", "CHRONICLE_ALERT_WEEKLY_DEADLINE",
    "CHRONICLE_ANN_MIN_ROWS", "CHRONICLE_AWS_ACCESS_KEY_ID", "CHRONICLE_AWS_ENDPOINT_URL", "CHRONICLE_AWS_REGION",
    "CHRONICLE_AWS_SECRET_ACCESS_KEY", "CHRONICLE_BACKFILL_MAX_WORKERS", "CHRONICLE_BACKFILL_SPREAD",
    "CHRONICLE_BACKUP_KEEP", "CHRONICLE_CATALOG", "CHRONICLE_COLUMN_MAP", "CHRONICLE_CONTEXT_FLAGGED_WEEKS",
    "CHRONICLE_DATA_PATH", "CHRONICLE_DB_LOCK_TIMEOUT_S", "CHRONICLE_DEDUP_THRESHOLD",
    "CHRONICLE_DESK_IDLE_TIMEOUT_S", "CHRONICLE_DESK_LOGIN_MAX_FAILURES", "CHRONICLE_DESK_LOGIN_WINDOW_S",
    "CHRONICLE_DESK_PORT", "CHRONICLE_DESK_PREFECT_UI_URL", "CHRONICLE_DISTILL_DAYS", "CHRONICLE_DUCKDB_PATH",
    "CHRONICLE_EDIT_MAX_CHARS", "CHRONICLE_EMBEDDING_API_KEY", "CHRONICLE_EMBEDDING_BATCH_SIZE",
    "CHRONICLE_EMBEDDING_MODEL", "CHRONICLE_EMBEDDING_URL", "CHRONICLE_HOME", "CHRONICLE_INGEST_BATCH_FILES",
    "CHRONICLE_INGEST_INTERVAL_MINUTES", "CHRONICLE_INGEST_SETTLE_S", "CHRONICLE_INPUT_ROOTS",
    "CHRONICLE_KNOWLEDGE_MAX_CHARS", "CHRONICLE_KNOWLEDGE_MIN_IMPORTANCE", "CHRONICLE_LAKE_INLINE_ROWS",
    "CHRONICLE_LANCEDB_URI", "CHRONICLE_LLM_API_KEY", "CHRONICLE_LLM_BACKOFF_BASE_S", "CHRONICLE_LLM_BACKOFF_MAX_S",
    "CHRONICLE_LLM_CONCURRENCY", "CHRONICLE_LLM_CONTEXT_TOKENS", "CHRONICLE_LLM_MAX_ATTEMPTS", "CHRONICLE_LLM_MODEL",
    "CHRONICLE_LLM_TIMEOUT_S", "CHRONICLE_LLM_URL", "CHRONICLE_MAX_LINE_BYTES",
    "CHRONICLE_MEMORY_IMPORTANCE_HALF_LIFE_DAYS", "CHRONICLE_MEMORY_LLM_DECISIONS", "CHRONICLE_MEMORY_MIN_COSINE",
    "CHRONICLE_MEMORY_RECENCY_HALF_LIFE_DAYS", "CHRONICLE_NOTES_PROJECT", "CHRONICLE_OVERWRITE_ALLOWED_FILES",
    "CHRONICLE_PROJECT_TIMEZONES", "CHRONICLE_PROTECTED_FILES", "CHRONICLE_PSEUDONYMISE_FAMILIES",
    "CHRONICLE_REDACT_COMMIT_HASHES_SAFE", "CHRONICLE_REDACT_EXTRA_PATTERNS", "CHRONICLE_REDACT_SUBJECT_ID_PATTERN",
    "CHRONICLE_REPORT_MAX_CHARS", "CHRONICLE_SEARCH_FULLTEXT_WEIGHT", "CHRONICLE_SEARCH_IMPORTANCE_WEIGHT",
    "CHRONICLE_SEARCH_SCORE", "CHRONICLE_SEARCH_SEMANTIC_WEIGHT", "CHRONICLE_SOURCE_PATHS",
    "CHRONICLE_SPREAD_ALIVE_S", "CHRONICLE_TIMEZONE", "CHRONICLE_WEEK_LEASE_S", "CHRONICLE_WEEKS_PER_TASK",
    "CHRONICLE_WORKSPACE", "CHRONICLE_ZOMBIE_AFTER_S", "DISTILL_DAYS",
    "EMBEDDING_API_KEY", "EMBEDDING_MODEL", "EMBEDDING_URL", "LLM_API_KEY", "LLM_MODEL", "LLM_URL",
)
SPECIAL = {"catalog": "ducklake:postgres:dbname=x", "timezone": "Europe/Berlin",
           "project_timezones": {"XH305": "UTC"}, "weekly_deadline": "Tue 10:00"}
BY_NAME = {name: path for path, names in env_names(Settings).items() for name in names}


def _other_value(path: tuple[str | None, str]) -> Any:
    """A valid value that differs from the field's default, from its type (a few need a shape of their own)."""
    if path[1] in SPECIAL:
        return SPECIAL[path[1]]
    info = field_of(Settings, path)
    default = info.get_default(call_default_factory=True)
    kind = info.annotation
    if typing.get_origin(kind) in (typing.Union, types.UnionType):  # `X | None`
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    origin = typing.get_origin(kind)
    if kind is bool:
        return not default
    if kind is int:
        return (default or 40) + 1
    if kind is float:
        return round((default or 0.8) / 2, 3)
    if origin is typing.Literal:
        return next(c for c in typing.get_args(kind) if c != default)
    if origin is list:
        choices = typing.get_args(typing.get_args(kind)[0])
        return [choices[0]] if choices else ["X-[0-9]+"]
    if origin is dict:
        return {"time": "ts"}
    return "/srv/other" if kind is Path else "value-from-test"


def _read(settings: Settings, path: tuple[str | None, str]) -> Any:
    section, name = path
    value = getattr(settings if section is None else getattr(settings, section), name)
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    return str(value) if isinstance(value, Path) else value


def _as_env(value: Any) -> str:
    return json.dumps(value) if isinstance(value, list | dict) else str(value)


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [*ENV_NAMES, *RETIRED, "CHRONICLE_CONFIG"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no `.env` or `chronicle.toml` but the test's own


def test_every_earlier_environment_name_is_still_a_setting() -> None:
    assert set(ENV_NAMES) <= BY_NAME.keys(), sorted(set(ENV_NAMES) - BY_NAME.keys())


@pytest.mark.parametrize("name", ENV_NAMES)
def test_each_name_reaches_its_field_from_the_environment(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    path = BY_NAME[name]
    value = _other_value(path)
    assert _read(Settings(), path) != value
    monkeypatch.setenv(name, _as_env(value))
    assert _read(Settings(), path) == value


def test_every_field_is_read_from_dotenv_toml_and_keywords(tmp_path: Path) -> None:
    values = {path: _other_value(path) for path in env_names(Settings)}
    flat = {name.removeprefix("CHRONICLE_").lower(): v for path, v in values.items()
            for name in env_names(Settings)[path][:1]}
    (tmp_path / ".env").write_text("".join(f"{env_names(Settings)[p][0]}='{_as_env(v)}'\n"
                                           for p, v in values.items()), encoding="utf-8")
    from_dotenv = Settings()
    (tmp_path / ".env").unlink()
    toml = "".join(f"{k} = {json.dumps(v) if not isinstance(v, dict) else _inline(v)}\n" for k, v in flat.items())
    (tmp_path / "chronicle.toml").write_text(toml, encoding="utf-8")
    from_toml = Settings()
    (tmp_path / "chronicle.toml").unlink()
    from_keywords = Settings(**flat)
    for path, value in values.items():
        assert _read(from_dotenv, path) == _read(from_toml, path) == _read(from_keywords, path) == value, path


def _inline(table: dict[str, str]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in table.items()) + "}"


def test_a_section_table_and_a_flat_key_are_one_setting_with_the_usual_priority(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "chronicle.toml").write_text(
        'report_max_chars = 300\n[llm]\nurl = "http://toml/v1"\nconcurrency = 2\n[desk]\nport = 9100\n',
        encoding="utf-8")
    settings = Settings()
    assert (settings.llm.url, settings.llm.concurrency, settings.desk.port) == ("http://toml/v1", 2, 9100)
    assert settings.weekly.report_max_chars == 300
    monkeypatch.setenv("LLM_URL", "http://env/v1")  # the environment beats the file, for that field only
    settings = Settings()
    assert (settings.llm.url, settings.llm.concurrency) == ("http://env/v1", 2)
    assert Settings(llm_url="http://kw/v1").llm.url == "http://kw/v1"  # a keyword beats both
    assert Settings(llm={"url": "http://kw/v1"}).llm.concurrency == 2  # a partial section keeps the rest


def test_updated_is_a_validated_copy_in_either_spelling() -> None:
    base = Settings(desk_port=9000, llm_url="http://a/v1")
    assert base.updated(desk_port=9001).desk.port == 9001
    assert base.updated(desk={"idle_timeout_s": 60}).desk.port == 9000
    assert base.updated(desk_port=9001).llm.url == "http://a/v1" and base.desk.port == 9000
    with pytest.raises(ValueError):
        base.updated(desk_port=0)


def test_a_refused_nested_value_is_named_by_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONICLE_DESK_PORT", "0")
    with pytest.raises(ValueError) as refused:
        Settings()
    assert settings_problem(refused.value).startswith("setting CHRONICLE_DESK_PORT: Input should be greater")
    monkeypatch.delenv("CHRONICLE_DESK_PORT")
    monkeypatch.setenv("CHRONICLE_REDACT_EXTRA_PATTERNS", "XH-1")
    with pytest.raises(Exception) as undecodable:
        Settings()
    assert settings_problem(undecodable.value).startswith("setting CHRONICLE_REDACT_EXTRA_PATTERNS: not valid JSON")


def test_a_retired_variable_warns_that_it_is_no_longer_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONICLE_KNOWLEDGE_DAILY_CAP", "9")
    with pytest.warns(UserWarning, match="CHRONICLE_KNOWLEDGE_DAILY_CAP is no longer read"):
        Settings()


def test_flat_names_are_unambiguous() -> None:
    """No two settings share a flat spelling or an environment name (a keyword would set the wrong one)."""
    names = [n for names in env_names(Settings).values() for n in names]
    assert len(names) == len(set(names))
    assert len(flat_keys(Settings)) == len({n.removeprefix("CHRONICLE_").lower() for n in names})
    assert all(isinstance(getattr(Settings(), s), BaseModel) for s in Settings.sections())
    assert os.environ.get("CHRONICLE_CONFIG") is None

"""The one configuration object.

Seed 002's environment names (`LLM_URL`, `EMBEDDING_MODEL`, `DISTILL_DAYS`, ...) are read as they
are, because existing memory-vector installs already export them; everything Chronicle adds lives
under `CHRONICLE_`. The settings are nested by component (`settings.llm.url`, `settings.desk.port`;
`chronicle/settings_sections.py`); every name a setting was ever given is still read
(`chronicle/settings_checks.py`). Values come from (highest first): init kwargs, environment, `.env`,
`chronicle.toml` (or the file named by `CHRONICLE_CONFIG`), defaults.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import SettingsConfigDict

from chronicle.private import private_umask
from chronicle.redaction.urls import mask_url_credentials
from chronicle.settings_checks import CheckedSettings, mask_conninfo, nest, section_model
from chronicle.settings_sections import (
    MINILM_EMBEDDING_MODEL,
    OFFLINE_EMBEDDING_MODEL,
    AlertSettings,
    DeskSettings,
    EmbeddingSettings,
    IngestSettings,
    LakeSettings,
    LLMSettings,
    MemorySettings,
    RedactSettings,
    WeeklySettings,
)

KNOWLEDGE_FILES = ("MEMORY.md", "SOUL.md", "USER.md", "IDENTITY.md", "AGENTS.md", "TOOLS.md")
__all__ = ["KNOWLEDGE_FILES", "MINILM_EMBEDDING_MODEL", "OFFLINE_EMBEDDING_MODEL", "Settings", "load_settings",
           "using"]


class Settings(CheckedSettings):
    """Effective configuration of one Chronicle process."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)
    OPERATOR: ClassVar[tuple[str, ...]] = ("home", "duckdb_path", "lancedb_uri", "workspace", "timezone",
                                           "project_timezones")

    # --- where the data lives -------------------------------------------------------------
    home: Path = Field(default=Path(".chronicle"))
    """Data folder. DuckDB, LanceDB and the knowledge-file workspace live under it unless overridden."""

    duckdb_path: Path | None = None
    """DuckDB file; default `$CHRONICLE_HOME/chronicle.duckdb`."""

    lancedb_uri: str | None = None
    """LanceDB folder or object-store URI (`s3://bucket/prefix`); default `$CHRONICLE_HOME/lancedb`."""

    workspace: Path | None = None
    """Folder holding the knowledge files (MEMORY.md, SOUL.md, ...); default `$CHRONICLE_HOME/workspace`."""

    db_lock_timeout_s: float = 600.0
    """How long a writer waits for the DuckDB file when another process holds it before failing."""

    # --- time ----------------------------------------------------------------------------
    timezone: str = "Asia/Shanghai"
    """Default project timezone: ISO weeks and local dates are computed in it."""

    project_timezones: dict[str, str] = Field(default_factory=dict)
    """Per-project timezone overrides, e.g. `{"XH305": "Europe/Berlin"}`."""

    # --- components ----------------------------------------------------------------------
    lake: LakeSettings = Field(default_factory=LakeSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    weekly: WeeklySettings = Field(default_factory=WeeklySettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    desk: DeskSettings = Field(default_factory=DeskSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    redact: RedactSettings = Field(default_factory=RedactSettings)

    # --- derived -------------------------------------------------------------------------
    @classmethod
    def sections(cls) -> tuple[str, ...]:
        """The components' names (`llm`, `desk`, ...), in declaration order."""
        return tuple(name for name, info in cls.model_fields.items() if section_model(info.annotation))

    @property
    def db_path(self) -> Path:
        return (self.duckdb_path or self.home / "chronicle.duckdb").expanduser().resolve()

    @property
    def lance_uri(self) -> str:
        if self.lancedb_uri:
            return self.lancedb_uri
        if self.lake.enabled:
            return f"{self.lake.data_root}/lancedb"
        return str((self.home / "lancedb").expanduser().resolve())

    @property
    def workspace_dir(self) -> Path:
        return (self.workspace or self.home / "workspace").expanduser().resolve()

    def tz_for(self, project_id: str) -> ZoneInfo:
        return ZoneInfo(self.project_timezones.get(project_id, self.timezone))

    def updated(self, **values: Any) -> Settings:
        """A validated copy with `values` changed, named as the constructor takes them (`desk_port=9000`,
        `desk={"port": 9000}`); the environment is not read again."""
        data = self.model_dump()
        for key, value in nest(type(self), values).items():
            merge = isinstance(value, dict) and isinstance(getattr(self, key, None), BaseModel)
            data[key] = {**data[key], **value} if merge else value
        return type(self).model_validate(data)

    def masked(self) -> dict[str, Any]:
        """Effective settings for display (nested by section), secrets replaced by `****`."""

        def mask(key: str, value: Any) -> Any:
            if isinstance(value, dict):
                return {k: mask(k, v) for k, v in value.items()}
            if isinstance(value, SecretStr) or (value is not None and key.endswith("api_key")):
                return "****"
            if key == "catalog" and isinstance(value, str):
                return mask_conninfo(value)
            # URL credentials (`LLM_URL=http://admin:pw@host/v1`, `PREFECT_API_URL`, …) in any string setting.
            return mask_url_credentials(value) if isinstance(value, str) else value

        data = {k: mask(k, v) for k, v in self.model_dump().items()}
        data.update(db_path=str(self.db_path), lance_uri=self.lance_uri, workspace_dir=str(self.workspace_dir))
        return data


_scoped: ContextVar[Settings | None] = ContextVar("chronicle_settings", default=None)


@contextmanager
def using(settings: Settings) -> Iterator[Settings]:
    """Run the block with `settings` as the entry point's configuration (the CLI's `--home`, tests).

    Flows read their settings once, when they start, with `load_settings()`; everything below them gets
    the object as a parameter. This scope is how a caller that starts a flow in-process hands it settings
    that are not in the environment, without editing `os.environ`.
    """
    token = _scoped.set(settings)
    try:
        yield settings
    finally:
        _scoped.reset(token)


def load_settings() -> Settings:
    """The settings of this entry point: the scoped ones (`using`), else read from the environment now.

    Called once per flow run or CLI command, never deep in a call chain: read each time (no process-wide
    cache), so a long-lived worker picks up a changed `chronicle.toml` at its next run.
    """
    private_umask()  # whatever this run creates (database, lake, files) is its owner's only
    return _scoped.get() or Settings()

"""Weekly-chronicle fixtures: the sample trial ingested once per session, copied into each test's home."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chronicle.settings import Settings
from tests.conftest import SAMPLE_MAP
from tests.fakellm import FakeLLMServer
from tests.fakellm.replies import safety_sentence


@pytest.fixture(scope="session")
def ingested_db(ingested_home: Path) -> Path:
    """A DuckDB file holding the sample's logs (both projects), ingested through the real flow once."""
    return ingested_home / "chronicle.duckdb"


@pytest.fixture
def trial(home: Path, ingested_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's home with the ingested sample; returns the home folder."""
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ingested_db, home / "chronicle.duckdb")
    monkeypatch.setenv("CHRONICLE_COLUMN_MAP", json.dumps(SAMPLE_MAP))

    return home


@pytest.fixture
def truth(sample_dir: Path) -> dict[str, Any]:
    return json.loads((sample_dir / "ground_truth.json").read_text(encoding="utf-8"))


@pytest.fixture
def online(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """Chronicle pointed at the fake endpoint with small backoff and timeout."""

    monkeypatch.setenv("LLM_URL", fake_llm.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("CHRONICLE_LLM_BACKOFF_BASE_S", "0.01")
    monkeypatch.setenv("CHRONICLE_LLM_BACKOFF_MAX_S", "0.05")
    monkeypatch.setenv("CHRONICLE_LLM_TIMEOUT_S", "1")
    yield fake_llm


def week_of_request(request: dict[str, Any]) -> int | None:
    """The week_number a weekly prompt is about (from its header line), or None."""
    import re

    for message in request.get("messages", []):
        match = re.search(r"week_number (\d{6})", str(message.get("content", "")))
        if match:
            return int(match.group(1))
    return None


def cite_first(request: dict[str, Any]) -> str:
    """A well-behaved model: a short report citing the first entry it was shown and the week's safety events."""
    return "## 本周要点\n\n- 项目按计划推进，详见流水账 [E1]。\n" + safety_sentence(request)


def db_rows(sql: str, params: list[Any] | None = None) -> list[tuple]:
    from chronicle.storage.db import connect

    with connect(Settings()) as conn:
        return conn.execute(sql, params or []).fetchall()


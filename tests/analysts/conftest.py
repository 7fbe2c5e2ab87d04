"""These tests run real flows: they ask for the session's Prefect API (tests/conftest.py `prefect_api`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_MAP


@pytest.fixture()
def trial(home: Path, ingested_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's home: a copy of the sample ingested once per session through the real flow."""
    monkeypatch.setenv("CHRONICLE_COLUMN_MAP", json.dumps(SAMPLE_MAP))
    shutil.copytree(ingested_home, home, dirs_exist_ok=True)
    return home / "chronicle.duckdb"

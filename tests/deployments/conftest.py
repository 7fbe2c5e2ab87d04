"""Helpers for tests that run real `chronicle` processes against the session's real Prefect server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

CHRONICLE = str(Path(sys.executable).parent / "chronicle")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def api_url() -> str:
    """The session server's API URL (`prefect_test_harness` sets it as a Prefect setting, not in os.environ)."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    assert url, "the session fixture prefect_api should have set PREFECT_API_URL"
    return url


@pytest.fixture()
def proc_env(home: Path, api_url: str) -> dict[str, str]:
    """Environment for a child `chronicle` process: this test's CHRONICLE_HOME and the session's Prefect API."""
    return {**os.environ, "CHRONICLE_HOME": str(home), "PREFECT_API_URL": api_url,
            "PREFECT_LOGGING_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1"}


def write_jsonl(path: Path, project: str, n: int, tag: str) -> None:
    """`n` valid log lines of one project, spread over January 2026 (content unique per `tag`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"project_id": project, "ts": f"2026-01-{1 + i % 28:02d}T10:{i % 60:02d}:00+08:00",
                                 "type": "message", "content": f"{tag} line {i}"}) + "\n")


def query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def start_holder(db: Path, seconds: float) -> subprocess.Popen:
    """A foreign process (not Chronicle: no file lock) that opens the DuckDB file for writing and sleeps.

    Returns once the file is held, so callers know the conflict is real.
    """
    code = ("import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
            "time.sleep(float(sys.argv[2])); c.close()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(db), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc

"""Helpers for tests that run real `chronicle` processes against the session's real Prefect server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def serving(cwd: Path, env: dict[str, str], timeout: float = 120) -> Iterator[Path]:
    """`chronicle serve` against the session's Prefect server until the block ends; yields its log file.

    Returns once serve has (re-)applied the deployments and polls for runs (it says "being served").
    """
    log = cwd / "serve.log"
    env = {**env, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}  # pick runs up at once, not after 10 s
    with log.open("w") as out:
        proc = subprocess.Popen([CHRONICLE, "serve"], env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while "being served" not in log.read_text():
            if proc.poll() is not None:
                pytest.fail(f"chronicle serve exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"chronicle serve did not start within {timeout}s:\n{log.read_text()[-4000:]}")
            time.sleep(0.5)  # polling for the event (the line in the log), not a fixed wait
        yield log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_final(flow_run_id, timeout: float = 300):
    """The flow run once it is in a final state (polling the API)."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while True:
            run = client.read_flow_run(flow_run_id)
            if run.state is not None and run.state.is_final():
                return run
            if time.monotonic() > deadline:
                state = run.state.name if run.state else "?"
                pytest.fail(f"flow run {flow_run_id} not final after {timeout}s ({state})")
            time.sleep(0.5)


def run_logs(flow_run_id) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with get_client(sync_client=True) as client:
        return [entry.message for entry in client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))]


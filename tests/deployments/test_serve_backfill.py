"""End to end on the real Prefect server: `chronicle serve` runs a backfill triggered through the API."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, LogFilter, LogFilterFlowRunId
from prefect.deployments import run_deployment

from chronicle.settings import Settings
from deployments.setup import run_setup
from tests.deployments.conftest import CHRONICLE, query, start_holder, write_jsonl

BACKFILL = "backfill-weeks/backfill-weeks"


def _wait_for_serving(proc: subprocess.Popen, log: Path, started: float, timeout: float = 60) -> None:
    """Until `serve` has (re-)applied the backfill deployment and polls for runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"chronicle serve exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        if "being served" in log.read_text():
            return
        time.sleep(0.5)
    pytest.fail(f"chronicle serve did not start within {timeout}s:\n{log.read_text()[-4000:]}")


def _wait_final(flow_run_id, timeout: float = 60):
    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            run = client.read_flow_run(flow_run_id)
            if run.state is not None and run.state.is_final():
                return run
            time.sleep(0.5)
    pytest.fail(f"flow run {flow_run_id} not finished after {timeout}s (state {run.state.name if run.state else '?'})")


@pytest.mark.slow
def test_backfill_triggered_through_the_api_runs_under_serve(home: Path, tmp_path: Path, settings: Settings,
                                                           proc_env: dict[str, str]) -> None:
    from flows.ingest_logs import ingest_logs

    # Two projects, three ISO weeks of January 2026 (2026-W01 starts Monday 2025-12-29).
    write_jsonl(tmp_path / "logs" / "a.jsonl", "ALPHA", 60, "a")
    write_jsonl(tmp_path / "logs" / "b.jsonl", "BETA", 60, "b")
    ingest_logs([str(tmp_path / "logs")])
    run_setup(settings, work_pool=False)

    log = tmp_path / "serve.log"
    env = {**proc_env, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}  # pick the run up at once, not after 10 s
    started = time.time()
    with log.open("w") as out:
        proc = subprocess.Popen([CHRONICLE, "serve"], env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for_serving(proc, log, started)

        # The form's schema is enforced by the API: a malformed week never becomes a run.
        with pytest.raises(Exception, match=r"start_week|pattern|Validation"):
            run_deployment(BACKFILL, parameters={"start_week": "2026-13", "end_week": "2026-W02"}, timeout=0)

        # An analyst's session holds the DuckDB file while the run starts: the run must wait, say so, finish.
        holder = start_holder(home / "chronicle.duckdb", 8.0)
        try:
            flow_run = run_deployment(BACKFILL, timeout=0, parameters={
                "project_id": "all", "start_week": "2026-W01", "end_week": "2026-W03", "only_missing": True,
                "force": False})
            run = _wait_final(flow_run.id)
        finally:
            holder.wait(timeout=30)
        assert run.state.is_completed(), f"{run.state}\n{log.read_text()[-4000:]}"
        assert "2026W01" in run.name and "2026W03" in run.name, run.name  # named by what it does
        with get_client(sync_client=True) as client:
            logs = [entry.message for entry in client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))]
        # The run's logs reach the UI (INFO included), Chronicle's own wait warning among them.
        assert any("is held by" in m and "waiting" in m for m in logs), logs
        assert any(m.startswith("Beginning flow run") for m in logs), logs

        reports = query(home / "chronicle.duckdb",
                        "SELECT project_id, week_number FROM weekly_reports ORDER BY ALL")
        assert {(p, w) for p, w in reports} >= {(p, w) for p in ("ALPHA", "BETA") for w in (202601, 202602, 202603)}
        with get_client(sync_client=True) as client:
            artifacts = client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id])))
        assert artifacts, "the backfill should leave progress/outcome artifacts on its run"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, 9)
            proc.wait(timeout=10)

"""End to end on the real Prefect server: `chronicle serve` runs a backfill triggered through the API."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
from prefect.deployments import run_deployment

from chronicle.deployments.setup import run_setup
from chronicle.settings import Settings
from tests.deployments.conftest import query, run_logs, serving, wait_final, write_jsonl
from tests.holder import DuckDBHolder

BACKFILL = "backfill-weeks/backfill-weeks"


def _release_once_waiting(holder: DuckDBHolder, flow_run_id, timeout: float = 300) -> None:
    """Let the holder go only once the run's logs (in the API) say it waits for the file."""
    deadline = time.monotonic() + timeout
    while not any("is held by" in m for m in run_logs(flow_run_id)):
        with get_client(sync_client=True) as client:
            run = client.read_flow_run(flow_run_id)
        if run.state is not None and run.state.is_final():
            pytest.fail(f"the run ended ({run.state.name}) before it logged that it waits: {run.state.message}")
        if time.monotonic() > deadline:
            pytest.fail(f"the run did not log a wait for the held file within {timeout}s")
        time.sleep(0.5)  # polling the API for the event
    holder.release()


@pytest.mark.slow
def test_backfill_triggered_through_the_api_runs_under_serve(home: Path, tmp_path: Path, settings: Settings,
                                                           proc_env: dict[str, str]) -> None:
    from chronicle.flows.ingest_logs import ingest_logs

    # Two projects, three ISO weeks of January 2026 (2026-W01 starts Monday 2025-12-29).
    write_jsonl(tmp_path / "logs" / "a.jsonl", "ALPHA", 60, "a")
    write_jsonl(tmp_path / "logs" / "b.jsonl", "BETA", 60, "b")
    ingest_logs([str(tmp_path / "logs")])
    run_setup(settings, work_pool=False)

    with serving(tmp_path, proc_env) as log:
        # An analyst's session holds the DuckDB file while the run starts: the run must wait, say so, finish.
        with DuckDBHolder(home / "chronicle.duckdb") as holder:
            flow_run = run_deployment(BACKFILL, timeout=0, parameters={
                "project_id": "all", "start_week": "2026-W01", "end_week": "2026-W03", "only_missing": True,
                "force": False})
            _release_once_waiting(holder, flow_run.id)
        run = wait_final(flow_run.id)
        assert run.state.is_completed(), f"{run.state}\n{log.read_text()[-4000:]}"
        assert "2026W01" in run.name and "2026W03" in run.name, run.name  # named by what it does
        assert run.state.message and "6 week(s) of ALPHA, BETA 2026-W01..2026-W03: generated 6" in run.state.message
        logs = run_logs(run.id)
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
        summary = next(a for a in artifacts if a.key and a.key.endswith("-summary"))
        assert "held by" in summary.data, summary.data  # the wait is in the summary, not only among the logs

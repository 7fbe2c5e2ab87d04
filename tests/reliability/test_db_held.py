"""The DuckDB file held by another process past the lock timeout: the run ends with one line naming the holder
and what to do, and the failed run is in `chronicle runs` once the file is free."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronicle.settings import Settings
from tests.holder import DuckDBHolder


def test_an_ingest_past_the_lock_timeout_names_the_holder_and_is_listed(home: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.services.run_history import list_runs
    from chronicle.storage.files import DatabaseBusyError

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(json.dumps({"project_id": "P", "ts": "2026-03-02T10:00:00Z", "content": "x"}) + "\n")
    ingest_logs([str(logs)])  # the database exists; now an analyst's shell holds it
    monkeypatch.setenv("CHRONICLE_DB_LOCK_TIMEOUT_S", "1")
    with DuckDBHolder(home / "chronicle.duckdb") as holder, pytest.raises(DatabaseBusyError) as caught:
        ingest_logs([str(logs)])
    message = str(caught.value)
    assert f"(PID {holder.proc.pid})" in message and "\n" not in message
    assert "close that process or wait for it" in message and "chronicle runs" in message
    runs = list_runs(Settings(), 5, "ingest")
    assert [r.state for r in runs] == ["FAILED", "COMPLETED"]
    assert "held by" in (runs[0].message or "")
    assert not (home / "pending_runs.jsonl").exists()  # recorded in pipeline_runs now the file is free


@pytest.mark.parametrize("flow", ["backfill", "weekly", "summarize", "distill"])
def test_every_flow_refused_by_a_held_file_says_why_in_one_line_without_a_traceback(
        flow: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.flows.summarize_week import summarize_week
    from chronicle.flows.weekly_chronicle import weekly_chronicle

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(json.dumps({"project_id": "P", "ts": "2026-03-02T10:00:00Z", "content": "x"}) + "\n")
    ingest_logs([str(logs)])
    monkeypatch.setenv("CHRONICLE_DB_LOCK_TIMEOUT_S", "1")
    start = {"backfill": lambda: backfill_weeks(project_id="P", return_state=True),
             "weekly": lambda: weekly_chronicle(week="2026-W10", return_state=True),
             "summarize": lambda: summarize_week(project_id="P", week="2026-W10", return_state=True),
             "distill": lambda: distill_memory(days=7, until="2026-03-05", return_state=True)}[flow]
    with DuckDBHolder(home / "chronicle.duckdb") as holder:
        state = start()
    assert state.is_failed() and f"(PID {holder.proc.pid})" in state.message, state.message
    run_id = state.state_details.flow_run_id
    APILogWorker.drain_all(timeout=30)
    with get_client(sync_client=True) as client:
        lines = [entry.message for entry in client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))]
    assert [line for line in lines if line.startswith("refused:") and "held by" in line], lines
    assert not any("Traceback" in line for line in lines), lines

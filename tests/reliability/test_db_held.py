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

"""Another process holds the DuckDB file: a weekly backfill waits for it, says so in its log, and finishes."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from chronicle.settings import Settings
from tests.reliability.procs import hold_duckdb

HOLD_S = 5.0


def test_backfill_waits_for_a_foreign_holder_and_logs_it(home: Path, sample_dir: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    from flows.backfill_weeks import backfill_weeks
    from flows.ingest_logs import ingest_logs
    from storage.db import connect

    ingest_logs([str(sample_dir / "logs" / "XH201")])
    # Prefect re-configures logging when a flow starts (root handlers are replaced): listen on our logger.
    chronicle_log = logging.getLogger("chronicle")
    chronicle_log.addHandler(caplog.handler)
    holder = hold_duckdb(home / "chronicle.duckdb", HOLD_S)
    released_at = time.monotonic() + HOLD_S
    try:
        rows = backfill_weeks(project_id="XH201", start_week="2025-W20", end_week="2025-W23")
        finished_at = time.monotonic()
    finally:
        chronicle_log.removeHandler(caplog.handler)
        holder.wait(timeout=30)

    assert [r.outcome for r in rows] == ["generated"] * 4
    assert finished_at >= released_at - 0.2  # it could only write once the holder let go
    waits = [r.getMessage() for r in caplog.records if r.name == "chronicle.storage"]
    db = str(home / "chronicle.duckdb")
    assert any(db in m and "held by" in m and "waiting" in m for m in waits), waits
    assert any(db in m and "free again" in m for m in waits), waits
    with connect(Settings()) as conn:
        assert conn.execute("SELECT count(*) FROM weekly_reports").fetchall() == [(4,)]
        assert conn.execute("SELECT state FROM pipeline_runs WHERE flow_name = 'backfill-weeks'").fetchall() == [
            ("COMPLETED",)]

"""Another process holds the DuckDB file: a weekly backfill waits for it, says so in its log, and finishes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from chronicle.settings import Settings
from tests.holder import DuckDBHolder


class _ReleaseWhenWaiting(logging.Handler):
    """Lets the holder go only once the run has logged that it waits for the file (the event, not a clock)."""

    def __init__(self, holder: DuckDBHolder) -> None:
        super().__init__()
        self.holder, self.seen_wait_before_release = holder, False

    def emit(self, record: logging.LogRecord) -> None:
        if "held by" in record.getMessage() and not self.holder.released:
            self.seen_wait_before_release = True
            self.holder.release()


def test_backfill_waits_for_a_foreign_holder_and_logs_it(home: Path, sample_dir: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.storage.db import connect

    ingest_logs([str(sample_dir / "logs" / "XH201")])
    # Prefect re-configures logging when a flow starts (root handlers are replaced): listen on our logger.
    chronicle_log = logging.getLogger("chronicle")
    chronicle_log.addHandler(caplog.handler)
    with DuckDBHolder(home / "chronicle.duckdb") as holder:
        release = _ReleaseWhenWaiting(holder)
        logging.getLogger("chronicle.storage").addHandler(release)
        try:
            rows = backfill_weeks(project_id="XH201", start_week="2025-W20", end_week="2025-W23")
        finally:
            chronicle_log.removeHandler(caplog.handler)
            logging.getLogger("chronicle.storage").removeHandler(release)

    assert release.seen_wait_before_release  # the run met the held file, said so, and only then could go on
    assert [r.outcome for r in rows] == ["generated"] * 4
    waits = [r.getMessage() for r in caplog.records if r.name == "chronicle.storage"]
    db = str(home / "chronicle.duckdb")
    assert any(db in m and "held by" in m and "waiting" in m for m in waits), waits
    assert any(db in m and "free again" in m for m in waits), waits
    with connect(Settings()) as conn:
        assert conn.execute("SELECT state FROM pipeline_runs WHERE flow_name = 'backfill-weeks'").fetchall() == [
            ("COMPLETED",)]
        [(run_id, counts)] = conn.execute(
            "SELECT flow_run_id, counts FROM pipeline_runs WHERE flow_name = 'backfill-weeks'").fetchall()
    # The wait is in the run's record and its summary artifact too, not only among the log lines.
    assert any("held by" in note for note in json.loads(counts)["notes"]), counts
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    # This run's artifact: other tests of the session publish under the same key on the same API.
    with get_client(sync_client=True) as client:
        summary = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["backfill-xh201-summary"]),
            flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])), limit=1)
    assert summary and "held by" in summary[0].data and "## Notes" in summary[0].data, summary

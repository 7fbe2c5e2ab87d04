"""Run-history rows (chronicle.run_rows): what `chronicle runs` shows, and which RUNNING rows are orphans."""

from __future__ import annotations

from datetime import datetime

from chronicle.run_rows import RunRow, crashed, orphaned

T0 = datetime(2026, 3, 2, 10, 0, 0)


def _row(**kw) -> RunRow:
    base = {"flow_run_id": "r1", "flow_name": "backfill-weeks", "state": "COMPLETED", "started_at": T0}
    return RunRow(**(base | kw))


def test_weekly_counts_are_separate_columns() -> None:
    row = _row(ended_at=datetime(2026, 3, 2, 10, 0, 12),
               counts={"weeks": 11, "outcomes": {"generated": 2, "cached": 8, "empty": 1}, "llm_calls": 2})
    table = row.table_row()
    assert (table["generated"], table["cached"], table["failed"], table["took"]) == (2, 8, 0, "12.0s")
    assert table["summary"] == "empty 1; LLM calls 2"
    data = row.as_dict()
    assert (data["generated"], data["cached"], data["failed"], data["seconds"]) == (2, 8, None, 12.0)


def test_ingest_and_refused_rows_read_plainly() -> None:
    ingest = _row(flow_name="ingest-logs", counts={"files": 2, "by_status": {"ingested": 2}, "entries_added": 40,
                                                   "entries_removed": 0, "rejects": {"invalid_json": 3}})
    assert ingest.summary() == "files 2 {'ingested': 2}, +40 entries, 3 rejects"
    assert ingest.table_row()["generated"] == ""
    refused = _row(state="FAILED", message="ParameterError: unknown project 'XH999'")
    assert refused.table_row()["message"] == "ParameterError: unknown project 'XH999'"


def test_orphans_are_running_rows_of_this_host_whose_process_is_gone() -> None:
    rows = [_row(flow_run_id="dead", state="RUNNING", host="h", pid=1, pid_started=5.0),
            _row(flow_run_id="live", state="RUNNING", host="h", pid=2, pid_started=6.0),
            _row(flow_run_id="other-host", state="RUNNING", host="g", pid=1, pid_started=5.0),
            _row(flow_run_id="no-pid", state="RUNNING", host="h"),
            _row(flow_run_id="done", state="COMPLETED", host="h", pid=1, pid_started=5.0)]
    found = orphaned(rows, "h", lambda pid, started: pid == 2)
    assert [r.flow_run_id for r in found] == ["dead"]
    marked = crashed(found[0], datetime(2026, 3, 2, 11))
    assert marked.state == "CRASHED" and marked.ended_at == datetime(2026, 3, 2, 11)
    assert "process 1 on h ended without finishing" in (marked.message or "")

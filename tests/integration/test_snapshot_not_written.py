"""A read snapshot that cannot be written (a full disk, a path taken) after the run stored its rows: the run's
recorded state matches its end — Completed, its message and Logs tab saying the snapshot is behind — never a
run recorded COMPLETED that exits with a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from chronicle.flows.ingest_logs import ingest_logs


def test_an_ingest_whose_snapshot_cannot_be_written_completes_and_says_so(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "ops.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps({"project_id": "P", "ts": f"2026-01-0{i}T10:00:00+08:00", "type": "message",
                                       "content": f"line {i}"}) + "\n" for i in range(1, 4)))
    blocked = home / "chronicle.snapshot.duckdb"  # the snapshot's place is taken: its copy cannot land there
    blocked.mkdir(parents=True)
    (blocked / "keep").write_text("x")
    state = ingest_logs([str(log)], return_state=True)
    assert state.is_completed(), state
    assert "read snapshot was not published" in state.message and "next run publishes it" in state.message
    assert state.result().entries_added == 3
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        assert conn.execute("SELECT state FROM pipeline_runs").fetchall() == [("COMPLETED",)]
        assert conn.execute("SELECT count(*) FROM raw_logs").fetchall() == [(3,)]
    # The place freed, the next run publishes the snapshot with everything stored.
    (blocked / "keep").unlink()
    blocked.rmdir()
    assert ingest_logs([str(log)], return_state=True).message.find("snapshot") == -1
    with duckdb.connect(str(blocked), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM raw_logs").fetchall() == [(3,)]

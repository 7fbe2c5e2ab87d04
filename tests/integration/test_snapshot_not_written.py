"""The analysts' read snapshot after every writing flow, and one that cannot be written (a full disk, a path
taken) after the run stored its rows: the run's recorded state matches its end — Completed, its message and
Logs tab saying the snapshot is behind — never a run recorded COMPLETED that exits with a traceback."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest

from chronicle.flows.backfill_weeks import backfill_weeks
from chronicle.flows.distill_memory import distill_memory
from chronicle.flows.ingest_logs import ingest_logs
from chronicle.flows.summarize_week import summarize_week
from chronicle.flows.weekly_chronicle import weekly_chronicle
from tests.conftest import DATA


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


def _block(path: Path) -> None:
    """Take the snapshot's place with a directory: its copy cannot land there (as on a full disk)."""
    path.mkdir(parents=True)
    (path / "keep").write_text("x")


def _unblock(path: Path) -> None:
    (path / "keep").unlink()
    path.rmdir()


FLOWS = {
    "backfill-weeks": lambda: backfill_weeks(project_id="P", return_state=True),
    "weekly-chronicle": lambda: weekly_chronicle(week="2026-W02", return_state=True),
    "summarize-week": lambda: summarize_week(project_id="P", week="2026-W02", return_state=True),
    "distill-memory": lambda: distill_memory(days=30, until=date(2026, 2, 24), return_state=True),
}


@pytest.mark.parametrize("flow", sorted(FLOWS))
def test_every_writing_flow_publishes_the_snapshot_or_completes_saying_it_did_not(
        flow: str, home: Path, tmp_path: Path) -> None:
    """The rule is the run's, not one flow's: each writing flow publishes what it stored, and one that cannot
    still ends as its row says."""
    logs = tmp_path / "logs"
    shutil.copytree(DATA / "openclaw" / "memory", logs / "memory")
    (logs / "ops.jsonl").write_text("".join(json.dumps({"project_id": "P", "ts": f"2026-01-{d:02d}T10:00:00+08:00",
                                                        "type": "message", "content": f"visit {d}"}) + "\n"
                                            for d in (5, 6, 12, 13)))
    assert ingest_logs([str(logs)], return_state=True).is_completed()
    snapshot = home / "chronicle.snapshot.duckdb"
    snapshot.unlink()
    _block(snapshot)
    state = FLOWS[flow]()
    assert state.is_completed(), state
    assert "read snapshot was not published" in state.message, state.message
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        assert conn.execute("SELECT state FROM pipeline_runs WHERE flow_name = ?", [flow]).fetchall() == [
            ("COMPLETED",)]
    _unblock(snapshot)
    assert "snapshot" not in (FLOWS[flow]().message or "")
    with duckdb.connect(str(snapshot), read_only=True) as conn:  # the second run's rows, its final row too
        assert conn.execute("SELECT state FROM pipeline_runs WHERE flow_name = ?", [flow]).fetchall() == [
            ("COMPLETED",), ("COMPLETED",)]
        table = "distill_chunks" if flow == "distill-memory" else "weekly_reports"
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] > 0

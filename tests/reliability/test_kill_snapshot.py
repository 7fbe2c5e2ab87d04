"""kill -9 while a run publishes the read snapshot, its copy of the database written but not yet swapped in: the next
run leaves no temporary copy behind (each is as big as the database, on a disk that may be filling) and publishes
the snapshot whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import duckdb

from chronicle.flows.ingest_logs import ingest_logs
from tests.reliability.killer import python_cmd

DIES_MID_PUBLISH = """
import os, signal
import chronicle.storage.snapshot as snapshot
from chronicle.settings import Settings

def killed(conn, path):  # the copy is on disk, not yet checked nor swapped in
    os.kill(os.getpid(), signal.SIGKILL)

snapshot._check_copy = killed
snapshot.publish_snapshot(Settings())
"""


def _log(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"project_id": "P", "ts": f"2026-01-{1 + i % 28:02d}T10:00:00+08:00",
                                        "type": "message", "content": f"line {i}"}) + "\n" for i in range(n)))


def _copies(home: Path) -> list[str]:
    return sorted(p.name for p in home.glob(".chronicle.snapshot.duckdb.*.tmp"))


def test_a_snapshot_copy_killed_midway_is_cleared_by_the_next_run(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "ops.jsonl"
    _log(log, 50)
    assert ingest_logs([str(log)], return_state=True).is_completed()
    env = {**os.environ, "CHRONICLE_HOME": str(home)}
    died = subprocess.run(python_cmd(DIES_MID_PUBLISH), env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert died.returncode == -signal.SIGKILL, died.stderr
    assert len(_copies(home)) == 1  # what the kill left

    _log(log, 80)  # the next run has something to store, and publishes the snapshot after it
    assert ingest_logs([str(log)], return_state=True).is_completed()
    assert _copies(home) == []
    with duckdb.connect(str(home / "chronicle.snapshot.duckdb"), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM raw_logs").fetchall() == [(80,)]

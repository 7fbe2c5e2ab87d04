"""Safe concurrent DuckDB access with REAL processes: a foreign holder, two writers, the analysts' snapshot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from chronicle.cli.main import app
from chronicle.settings import Settings
from chronicle.storage.db import connect
from chronicle.storage.snapshot import publish_snapshot, snapshot_path
from tests.deployments.conftest import CHRONICLE, query, write_jsonl
from tests.holder import DuckDBHolder


def test_ingest_waits_for_a_foreign_holder_and_logs_it(home: Path, tmp_path: Path, proc_env: dict[str, str]) -> None:
    write_jsonl(tmp_path / "logs" / "a.jsonl", "P", 300, "a")
    db = home / "chronicle.duckdb"
    with DuckDBHolder(db) as holder:  # e.g. an analyst's `duckdb chronicle.duckdb` left open
        proc = subprocess.Popen([CHRONICLE, "ingest", str(tmp_path / "logs")], env=proc_env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        said = []
        for line in proc.stderr:  # until the run says it waits for the file: only then let the holder go
            said.append(line)
            if "is held by" in line and "waiting" in line:
                break
        assert not holder.released and proc.poll() is None, "".join(said)
        holder.release()
        out, rest = proc.communicate(timeout=300)
    errors = "".join(said) + rest
    assert proc.returncode == 0, out + errors
    assert "free again" in errors, errors
    assert query(db, "SELECT count(*), count(DISTINCT entry_id) FROM raw_logs") == [(300, 300)]
    assert query(db, "SELECT state FROM pipeline_runs") == [("COMPLETED",)]


def test_two_concurrent_ingests_keep_every_row_once(home: Path, tmp_path: Path, proc_env: dict[str, str]) -> None:
    for folder, project in (("one", "A"), ("two", "B")):
        for i in range(3):
            write_jsonl(tmp_path / folder / f"f{i}.jsonl", project, 1500, f"{folder}{i}")
    procs = [subprocess.Popen([CHRONICLE, "ingest", str(tmp_path / folder)], env=proc_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for folder in ("one", "two")]
    outputs = [p.communicate(timeout=180) for p in procs]
    for proc, (out, errs) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out + errs
    db = home / "chronicle.duckdb"
    assert query(db, "SELECT project_id, count(*), count(DISTINCT entry_id) FROM raw_logs GROUP BY 1 ORDER BY 1") == [
        ("A", 4500, 4500), ("B", 4500, 4500)]
    assert query(db, "SELECT count(*) FROM ingest_files") == [(6,)]
    assert query(db, "SELECT state, count(*) FROM pipeline_runs GROUP BY 1") == [("COMPLETED", 2)]
    # Each run published the snapshot; the last one to finish saw both runs' rows.
    assert query(snapshot_path(Settings()), "SELECT count(*) FROM raw_logs") == [(9000,)]


def test_snapshot_is_readable_while_a_writer_holds_the_main_file(home: Path, tmp_path: Path,
                                                                 proc_env: dict[str, str]) -> None:
    write_jsonl(tmp_path / "logs" / "a.jsonl", "P", 50, "a")
    done = subprocess.run([CHRONICLE, "ingest", str(tmp_path / "logs")], env=proc_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    db, snap = home / "chronicle.duckdb", snapshot_path(Settings())
    with DuckDBHolder(db):
        with pytest.raises(duckdb.IOException, match="lock"):  # the main file is out of reach ...
            duckdb.connect(str(db), read_only=True)
        shell = subprocess.run([sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1], "
                                "read_only=True); print(c.execute('SELECT count(*) FROM raw_logs').fetchall()[0][0])",
                                str(snap)], capture_output=True, text=True, timeout=60)
        assert shell.returncode == 0 and shell.stdout.strip() == "50", shell.stderr  # ... the snapshot is not


def test_publish_replaces_atomically_under_an_open_reader(settings: Settings) -> None:
    with connect(settings) as conn:
        conn.execute("CREATE TABLE t AS SELECT 1 AS x")
    publish_snapshot(settings)
    reader = duckdb.connect(str(snapshot_path(settings)), read_only=True)
    try:
        with connect(settings) as conn:
            conn.execute("INSERT INTO t VALUES (2)")
        info = publish_snapshot(settings)
        assert info.tables >= 2 and info.bytes > 0
        # The open session keeps its consistent (old) view; a new session sees the new data.
        assert reader.execute("SELECT count(*) FROM t").fetchall() == [(1,)]
    finally:
        reader.close()
    assert query(snapshot_path(settings), "SELECT sum(x) FROM t") == [(3,)]
    assert not list(snapshot_path(settings).parent.glob(".*.tmp"))


def test_snapshot_command(settings: Settings) -> None:
    result = CliRunner().invoke(app, ["snapshot"])
    assert result.exit_code == 0, result.output
    assert "duckdb -readonly" in result.output and snapshot_path(settings).exists()


def test_snapshot_command_that_cannot_write_says_so_in_one_line(settings: Settings) -> None:
    blocked = snapshot_path(settings)  # its place taken, as a full disk refuses the copy
    blocked.mkdir(parents=True)
    (blocked / "keep").write_text("x")
    result = CliRunner().invoke(app, ["snapshot"])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "the snapshot was not published" in said and "the database is whole" in said, said
    assert "Traceback" not in said and not list(blocked.parent.glob(".*.tmp"))


def test_lock_of_a_killed_process_is_not_stale(settings: Settings) -> None:
    """filelock uses flock(2): the kernel drops the lock with its process, so a killed run blocks nobody."""
    lock = str(settings.db_path) + ".lock"
    settings.db_path.parent.mkdir(parents=True, exist_ok=True)
    code = ("import filelock, sys, time; l = filelock.FileLock(sys.argv[1]); l.acquire(); print('locked', flush=True);"
            " time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, lock], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        from filelock import FileLock, Timeout

        with pytest.raises(Timeout):  # really held while the process lives
            FileLock(lock).acquire(timeout=0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    started = time.monotonic()
    with connect(settings) as conn:
        assert conn.execute("SELECT 1").fetchall() == [(1,)]
    assert time.monotonic() - started < 5


def test_runs_command_shows_duckdb_history_with_prefect_state(home: Path, tmp_path: Path) -> None:
    from chronicle.flows.ingest_logs import ingest_logs

    write_jsonl(tmp_path / "logs" / "a.jsonl", "P", 20, "a")
    ingest_logs([str(tmp_path / "logs")])
    result = CliRunner().invoke(app, ["runs", "--limit", "5", "--flow", "ingest"])
    assert result.exit_code == 0, result.output
    # Not a terminal: the table is printed whole, one line per run, nothing cut to "…".
    line = next(x for x in result.output.splitlines() if "ingest-logs" in x)
    assert "COMPLETED" in line and "ingest-all-logs" in line and "+20 entries" in line, result.output
    assert "…" not in result.output
    with_prefect = CliRunner().invoke(app, ["runs", "--flow", "ingest", "--prefect"])
    assert with_prefect.exit_code == 0 and "Completed" in with_prefect.output, with_prefect.output
    empty = CliRunner().invoke(app, ["runs", "--flow", "no-such-flow"])
    assert empty.exit_code == 1 and "no flow is named like 'no-such-flow'; flows with runs: ingest-logs" in empty.output

"""The run history as it really is: `pipeline_runs` with rows of killed processes marked CRASHED.

No Prefect here (so `chronicle runs` answers without starting or even importing it): a run's process is
identified by host, pid and the process's start time (a pid reused by another process is not the run).
"""

from __future__ import annotations

import os
import socket
from typing import Any, NamedTuple

import psutil

from chronicle.run_rows import RunRow, crashed, orphaned
from chronicle.settings import Settings
from chronicle.storage import pipeline_runs as runs
from chronicle.storage import run_journal
from chronicle.storage.db import read, write
from chronicle.weeks import utc_now


class ProcessRef(NamedTuple):
    host: str
    pid: int
    started: float | None


def this_process() -> ProcessRef:
    try:
        started = psutil.Process().create_time()
    except psutil.Error:  # pragma: no cover - /proc not readable
        started = None
    return ProcessRef(socket.gethostname(), os.getpid(), started)


def process_alive(pid: int, started: float | None) -> bool:
    """Whether that process still runs: the pid exists, is not a zombie, and started when the run's did."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(proc.create_time() - started) < 1.0
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # e.g. AccessDenied: it exists
        return True


def reap(conn: Any, settings: Settings, host: str) -> list[RunRow]:
    """Mark this host's RUNNING rows whose process is gone as CRASHED, in an open write window, and give back the
    room each of those runs set aside for its final row (`run_journal.reserve`)."""
    dead = [crashed(r, utc_now()) for r in orphaned(runs.running_on(conn, host), host, process_alive)]
    runs.mark_crashed(conn, dead)
    run_journal.release(settings.db_path, [r.flow_run_id for r in dead])
    return dead


def still_working(conn: Any, flow_run_ids: list[str]) -> set[str]:
    """Which of these runs may still be working: RUNNING and not orphaned (`chronicle.run_rows.orphaned`: the same
    liveness rule `chronicle runs` and the claims use). A RUNNING row of another host, or without a pid, cannot
    be judged from here and counts as working; a run without a row, or one that ended, does not."""
    rows = [r for r in runs.runs_by_id(conn, flow_run_ids) if r.state == "RUNNING"]
    dead = {r.flow_run_id for r in orphaned(rows, socket.gethostname(), process_alive)}
    return {r.flow_run_id for r in rows} - dead


def list_runs(settings: Settings, limit: int = 20, flow: str | None = None) -> list[RunRow]:
    """Newest runs first, every state; a RUNNING row whose process is gone is marked CRASHED here and now."""
    host = socket.gethostname()
    journaled = run_journal.pending(settings.db_path)
    if journaled:  # runs that failed because the database was held: recorded now it is free
        write(settings, lambda conn: run_journal.flush(conn, journaled))
        run_journal.clear(settings.db_path, journaled)
    rows = read(settings, runs.recent_runs, limit, flow)
    dead = {r.flow_run_id for r in orphaned(rows, host, process_alive)}
    if not dead:
        return rows
    marked = {r.flow_run_id: r for r in write(settings, lambda conn: reap(conn, settings, host))}
    return [marked.get(r.flow_run_id, r) for r in rows]

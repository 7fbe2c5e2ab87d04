"""Run history that tells the truth: a run killed with -9 does not stay RUNNING."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronicle.cli.main import app
from chronicle.settings import Settings
from chronicle.storage.db import connect
from tests.deployments.conftest import write_jsonl
from tests.reliability.procs import child_env


def _states(settings: Settings) -> dict[str, str]:
    with connect(settings, read_only=True) as conn:
        return dict(conn.execute("SELECT flow_run_id, state FROM pipeline_runs").fetchall())


# A real flow run that records itself like every Chronicle flow, then waits inside its body until killed.
BLOCKING_FLOW = """
import sys
from prefect import flow
from chronicle.settings import load_settings
from chronicle.services.run_tracking import RUN_HOOKS, tracked_run

@flow(name="blocking-flow", **RUN_HOOKS)
def blocking_flow():
    with tracked_run(load_settings(), "blocking-flow", {}):
        print("IN-BODY", flush=True)
        sys.stdin.readline()

blocking_flow()
"""


def _killed_mid_run(settings: Settings, api_url: str, tmp_path: Path) -> str:
    """A flow run in a child process, SIGKILLed inside its body (after it said so); its run id."""
    proc = subprocess.Popen([sys.executable, "-c", BLOCKING_FLOW], env=child_env(settings.home, api_url),
                            cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    try:
        assert "IN-BODY" in proc.stdout.readline()  # the event: the run is recorded and in its body
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    running = [run_id for run_id, state in _states(settings).items() if state == "RUNNING"]
    assert len(running) == 1, _states(settings)  # what a killed run leaves behind...
    return running[0]


@pytest.mark.slow
def test_a_killed_run_reads_as_crashed_and_is_marked_at_the_next_flow_start(
        home: Path, tmp_path: Path, settings: Settings, api_url: str) -> None:
    from chronicle.flows.ingest_logs import ingest_logs

    write_jsonl(tmp_path / "logs" / "p.jsonl", "P", 30, "p")
    ingest_logs([str(tmp_path / "logs")])

    # 1. On read: `chronicle runs` shows it CRASHED with the reason, and records that.
    first = _killed_mid_run(settings, api_url, tmp_path)
    result = CliRunner().invoke(app, ["runs", "--format", "json"])
    assert result.exit_code == 0, result.output
    row = next(r for r in json.loads(result.output) if r["flow_run_id"] == first)
    assert row["state"] == "CRASHED" and "ended without finishing the run" in row["message"], row
    assert row["ended_at"] is not None
    assert _states(settings)[first] == "CRASHED"

    # 2. At the next start of any flow (here an ingest), without anyone reading the history.
    second = _killed_mid_run(settings, api_url, tmp_path)
    ingest_logs([str(tmp_path / "logs")])
    states = _states(settings)
    assert states[second] == "CRASHED" and states[first] == "CRASHED"
    assert sorted(states.values()).count("COMPLETED") == 2  # the two ingests


def test_a_live_run_of_this_process_is_not_marked(home: Path, settings: Settings) -> None:
    from chronicle.services.run_history import list_runs, this_process
    from chronicle.storage import pipeline_runs as runs

    me = this_process()
    with connect(settings) as conn:
        runs.run_started(conn, "live-run", "ingest-logs", {})
        runs.set_process(conn, "live-run", "ingest-all-x", me.host, me.pid, me.started)
        runs.run_started(conn, "reused-pid", "ingest-logs", {})  # same pid, another process's start time
        runs.set_process(conn, "reused-pid", "ingest-all-y", me.host, me.pid, me.started - 3600)
    states = {r.flow_run_id: r.state for r in list_runs(settings)}
    assert states == {"live-run": "RUNNING", "reused-pid": "CRASHED"}


def test_refused_runs_are_failed_runs_in_the_history(home: Path, tmp_path: Path, settings: Settings) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.param_checks import ParameterError
    from chronicle.services.run_history import list_runs

    write_jsonl(tmp_path / "logs" / "p.jsonl", "P", 5, "p")
    ingest_logs([str(tmp_path / "logs")])
    with pytest.raises(ParameterError, match="unknown project 'NOPE'; known projects: P"):
        backfill_weeks(project_id="NOPE")
    with pytest.raises(ParameterError, match="until '2026-02-30' is not a day"):
        distill_memory(until="2026-02-30")
    with pytest.raises(ParameterError, match="no such file or folder"):
        ingest_logs([str(tmp_path / "nope")])
    refused = {r.flow_name: r for r in list_runs(settings) if r.state != "COMPLETED"}
    assert {name: (r.state, r.message) for name, r in refused.items()} == {
        "backfill-weeks": ("FAILED", "ParameterError: unknown project 'NOPE'; known projects: P"),
        "distill-memory": ("FAILED", "ParameterError: until '2026-02-30' is not a day: write YYYY-MM-DD, "
                                     "e.g. 2026-04-26"),
        "ingest-logs": ("FAILED", f"ParameterError: no such file or folder: {tmp_path / 'nope'}"),
    }
    assert refused["backfill-weeks"].run_name == "backfill-NOPE-first..last"

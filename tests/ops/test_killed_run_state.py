"""A run started from a terminal whose process is gone while Prefect still shows it Running — killed with -9, or
ended after its Prefect server died so it could not say so — is given its row's final state in Prefect by the next
flow start. The zombie-run automation covers deployment runs only; without this the run stayed Running in the UI
and in `chronicle runs --prefect` for ever."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client

from chronicle.flows.ingest_logs import ingest_logs
from chronicle.services.run_history import list_runs
from chronicle.settings import Settings

HELD_RUN = """
import os, sys, threading
from prefect import flow
from chronicle.services.run_tracking import current_flow_run_id, tracked_run
from chronicle.settings import Settings

@flow(name="held-run")
def held():
    try:
        with tracked_run(Settings(), "held-run", {}):
            print(current_flow_run_id(), flush=True)
            if sys.argv[1] == "killed":
                threading.Event().wait()  # until killed
            raise RuntimeError("the LLM endpoint went away")
    except RuntimeError:
        # Its row says FAILED; the process ends before Prefect hears of it (its server had been killed meanwhile).
        os._exit(1)

held()
"""


@pytest.mark.parametrize(("how", "looked_first", "row_state"), [
    ("killed", False, "CRASHED"),
    ("killed", True, "CRASHED"),
    ("outlived-its-server", False, "FAILED"),
], ids=["killed-next-flow-notices", "killed-chronicle-runs-noticed-first", "ended-without-telling-prefect"])
def test_a_terminal_run_whose_process_is_gone_ends_in_prefect_as_in_its_row(
        home: Path, tmp_path: Path, proc_env: dict, how: str, looked_first: bool, row_state: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", HELD_RUN, how], env=proc_env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        run_id = child.stdout.readline().strip()
        assert run_id, "the run did not start"
    finally:
        if how == "killed":
            child.send_signal(signal.SIGKILL)
        child.wait(60)
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(uuid.UUID(run_id)).state.is_running()

    if looked_first:  # `chronicle runs` marks the row CRASHED first, without reaching Prefect
        assert next(r for r in list_runs(Settings()) if r.flow_run_id == run_id).state == "CRASHED"
    log = tmp_path / "logs" / "ops.jsonl"  # the next flow run, of any flow, settles Prefect's state
    log.parent.mkdir()
    log.write_text(json.dumps({"project_id": "P", "ts": "2026-01-05T10:00:00+08:00", "type": "message",
                               "content": "x"}) + "\n")
    assert ingest_logs([str(log)], return_state=True).is_completed()

    row = next(r for r in list_runs(Settings()) if r.flow_run_id == run_id)
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(uuid.UUID(run_id)).state
    assert (row.state, state.type.value) == (row_state, row_state), state
    assert state.message == row.message
    assert not list(home.glob("pending_runs*")), "the room the run set aside for its row is given back"

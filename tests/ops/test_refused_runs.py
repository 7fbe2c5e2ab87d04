"""Through a real Prefect server and `chronicle serve`, a typo never becomes a green run.

An unknown project, a reversed range, a week that does not exist and a week number out of range each give a
Failed run — never Completed, never Crashed — whose message names the problem, whether the run was started
with `run_deployment` or as the UI's form does it (with and without "Validate parameters"); each is in
`chronicle runs --format json`. A valid range with nothing to do completes and says why.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment

from chronicle.deployments.serve import build_deployments
from chronicle.deployments.setup import run_setup
from chronicle.settings import Settings
from tests.deployments.conftest import CHRONICLE, serving, wait_final, write_jsonl

BACKFILL, WEEKLY = "backfill-weeks/backfill-weeks", "weekly-chronicle/weekly-chronicle"
REFUSED = {  # parameters -> what the run's message must say
    "unknown project": ({"project_id": "XH999"}, "unknown project 'XH999'; known projects: ALPHA, BETA"),
    "reversed range": ({"start_week": "2025-W30", "end_week": "2025-W20"},
                       "start_week 2025-W30 is after end_week 2025-W20: the range is reversed"),
    "no such week": ({"start_week": "2025-W53"},
                     "start_week '2025-W53' does not exist: 2025 has ISO weeks W01 to W52 (YYYY-Www, e.g. 2026-W05)"),
    "week 60": ({"end_week": "2026-W60"}, "end_week '2026-W60' does not exist: 2026 has ISO weeks W01 to W53"),
    "not a week": ({"start_week": "2026-13"}, "start_week '2026-13' is not an ISO week: write YYYY-Www, e.g. 2026-W05"),
}


def _ui_form_run(api_url: str, deployment: str, parameters: dict, validate: bool) -> str:
    """What the UI's Run > Custom run form sends (prefect-ui-library's createDeploymentFlowRun)."""
    with get_client(sync_client=True) as client:
        deployment_id = client.read_deployment_by_name(deployment).id
    body = {"parameters": parameters, "enforce_parameter_schema": validate,
            "state": {"type": "SCHEDULED", "message": "Run from the Prefect UI"}}
    for attempt in range(10):  # a busy SQLite-backed server answers 503 now and then; Prefect's client retries too
        resp = httpx.post(f"{api_url}/deployments/{deployment_id}/create_flow_run", json=body, timeout=30)
        if resp.status_code != 503:
            break
        time.sleep(0.5 * 2**attempt)
    assert resp.status_code == 201, resp.text  # the API accepts the text; the flow judges it
    return resp.json()["id"]


@pytest.mark.slow
def test_typos_give_failed_runs_that_name_the_problem(home: Path, tmp_path: Path, settings: Settings, api_url: str,
                                                     proc_env: dict[str, str]) -> None:
    from chronicle.flows.ingest_logs import ingest_logs

    write_jsonl(tmp_path / "logs" / "a.jsonl", "ALPHA", 40, "a")
    write_jsonl(tmp_path / "logs" / "b.jsonl", "BETA", 40, "b")
    ingest_logs([str(tmp_path / "logs")])
    run_setup(settings, work_pool=False)

    # Every run is created before `chronicle serve` starts, none while others run. Prefect's server creates a run
    # in a deferred SQLite transaction that reads the deployment and then writes; if any other write commits in
    # between, SQLite refuses the write at once (SQLITE_BUSY_SNAPSHOT, a 503). With eight flow processes logging,
    # CI saw that go on for longer than Prefect's client retries.
    for deployment in build_deployments(settings)[0]:
        deployment.apply()
    started: dict[str, tuple[str, str]] = {}  # run id -> (case, expected message)
    # Each case through one path, alternating (every run is a fresh flow process: ~4 s of CPU each); the
    # issue's own case through all three. The messages themselves are unit-tested (tests/unit).
    for i, (case, (params, says)) in enumerate(REFUSED.items()):
        if case == "week 60" or i % 2 == 0:
            started[str(run_deployment(BACKFILL, parameters=params, timeout=0).id)] = (f"{case} (API)", says)
        for validate in (True, False) if case == "week 60" else (True,) if i % 2 else ():
            run_id = _ui_form_run(api_url, BACKFILL, params, validate)
            started[run_id] = (f"{case} (UI form, validate={validate})", says)
    weekly = run_deployment(WEEKLY, parameters={"week": "2025-W53"}, timeout=0)
    started[str(weekly.id)] = ("weekly, no such week", "week '2025-W53' does not exist")
    # Prefect's own type check (the form's "Validate parameters" unticked): refused before the body runs.
    typed = _ui_form_run(api_url, BACKFILL, {"max_workers": "many"}, validate=False)
    started[typed] = ("wrong type", "Validation of flow parameters failed")

    with serving(tmp_path, proc_env):
        for run_id, (case, says) in started.items():
            run = wait_final(run_id)
            assert run.state.is_failed(), f"{case}: {run.state.type} {run.state.message}"  # not Completed/Crashed
            assert says in (run.state.message or ""), f"{case}: {run.state.message}"

        # A valid range with nothing to do completes and says why.
        first = wait_final(run_deployment(BACKFILL, parameters={"start_week": "2026-W01", "end_week": "2026-W02"},
                                          timeout=0).id)
        assert first.state.is_completed() and "generated" in first.state.message, first.state.message
        again = wait_final(run_deployment(BACKFILL, parameters={"start_week": "2026-W01", "end_week": "2026-W02"},
                                          timeout=0).id)
        assert again.state.is_completed(), again.state.message
        assert again.state.message.startswith("nothing to do: all 4 week(s) of ALPHA, BETA 2026-W01..2026-W02 "
                                              "already have current reports (cached 4)"), again.state.message
        before = wait_final(run_deployment(BACKFILL, parameters={"start_week": "2020-W01", "end_week": "2020-W02"},
                                           timeout=0).id)
        assert before.state.is_completed(), before.state.message
        assert before.state.message == "nothing to do: no entries in ALPHA, BETA 2020-W01..2020-W02"

    listed = subprocess.run([CHRONICLE, "runs", "--format", "json", "--limit", "100"], env=proc_env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    rows = {row["flow_run_id"]: row for row in json.loads(listed.stdout)}
    for run_id, (case, says) in started.items():
        assert run_id in rows, f"{case}: run {run_id} missing from chronicle runs"
        assert rows[run_id]["state"] == "FAILED" and says in rows[run_id]["message"], (case, rows[run_id])
    cached = rows[str(again.id)]
    assert (cached["state"], cached["generated"], cached["cached"], cached["failed"]) == ("COMPLETED", None, 4, None)
    assert rows[str(first.id)]["generated"] == 4

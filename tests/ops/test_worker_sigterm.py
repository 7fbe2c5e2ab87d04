"""A process worker stopped with SIGTERM (systemctl stop, Ctrl-C, a pod eviction) exits promptly, and the run it
had in flight is not left Running: Prefect shows it final and `pipeline_runs` records it."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deployments.conftest import write_jsonl

pytestmark = pytest.mark.slow


@pytest.fixture()
def _own_automations() -> Iterator[None]:
    """`chronicle setup` below makes its automations on the worker's session server, shared with later tests:
    removed afterwards, so that its short zombie-run window never acts on another test's runs."""
    yield
    from prefect.client.orchestration import get_client

    from chronicle.deployments import automations

    with get_client(sync_client=True) as client:
        for name in automations.NAMES:
            for automation in client.read_automations_by_name(name):
                client.delete_automation(automation.id)


def test_sigterm_stops_the_worker_promptly_and_its_run_is_not_left_running(home: Path, tmp_path: Path,
                                                                          api_url: str, _own_automations: None) -> None:
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    from chronicle.flows.ingest_logs import ingest_logs
    from tests.fakellm import FakeLLMServer
    from tests.lake import servers
    from tests.lake.helpers import REPO

    write_jsonl(tmp_path / "logs" / "XH7.jsonl", "XH7", 20, "sigterm")
    ingest_logs([str(tmp_path / "logs")])
    asked = threading.Event()
    release = threading.Event()

    def responder(_request: dict) -> str:
        asked.set()  # the run is mid-week, inside an LLM call
        release.wait(timeout=300)
        return "## 本周要点\n\n- 按计划推进 [E1]。\n"

    # The worker's exit takes the run's process with it, which reports nothing: the run turns final when the
    # `chronicle-zombie-runs` automation (made by `chronicle setup` below) sees its heartbeats stop. Its window
    # at the shortest the product allows (31 s instead of 50 s): the run is killed seconds after it started, well
    # before a live run's second heartbeat is due, and any final state the automation gives it still passes.
    env = servers.prefect_env(PREFECT_API_URL=api_url, CHRONICLE_HOME=str(home), CHRONICLE_ZOMBIE_AFTER_S="31")
    with FakeLLMServer() as llm:
        llm.responder = responder
        try:
            servers.deploy_all(env, REPO)
            worker = servers.start_worker("w-term", tmp_path / "w", {**env, "LLM_URL": llm.base_url})
        except servers.ServerError as exc:
            pytest.fail(str(exc))
        try:
            run = run_deployment("weekly-chronicle/weekly-chronicle", timeout=0, parameters={"week": "2026-W02"})
            assert asked.wait(timeout=300), worker.text()[-3000:]
            started = time.monotonic()
            os.kill(worker.proc.pid, signal.SIGTERM)  # the worker only, as systemd's default KillMode would
            worker.proc.wait(timeout=60)
            stopped = time.monotonic() - started
        finally:
            release.set()
            worker.stop()
    print(f"worker exited {stopped:.1f}s after SIGTERM")
    assert stopped < 30, worker.text()[-3000:]
    with get_client(sync_client=True) as client:
        deadline = time.monotonic() + 120
        while not (state := client.read_flow_run(run.id).state).is_final():
            assert time.monotonic() < deadline, f"run still {state.name} after its worker stopped"
            time.sleep(1)  # the state lives in the API
    assert state.name in {"Crashed", "Cancelled", "Failed"}, state

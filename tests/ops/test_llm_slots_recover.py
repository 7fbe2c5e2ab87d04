"""The `llm` slots recover by themselves: a run killed with -9 while it held them, with the background Prefect
server killed too, gives them back once their lease ends (leases on disk, a lease of a minute); and a
reservation that waits for slots says what it waits for instead of waiting in silence."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from chronicle.settings import Settings
from tests.deployments.conftest import CHRONICLE

HOLDER = """
import sys, time
from chronicle.services.llm_gate import reserve_llm
from chronicle.settings import Settings
with reserve_llm(Settings(), 2) as gate:
    print(gate.source, flush=True)
    time.sleep(3600)
"""


def test_a_waiting_reservation_says_what_it_waits_for(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    from prefect.client.orchestration import get_client

    from chronicle.services.llm_gate import LIMIT_NAME, ensure_llm_limit, reserve_llm

    monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "1")
    settings = Settings()
    assert ensure_llm_limit(1)
    with get_client(sync_client=True) as client:  # a run that holds the one slot (e.g. killed a moment ago)
        lease = client.increment_concurrency_slots_with_lease(names=[LIMIT_NAME], slots=1, mode="concurrency",
                                                              lease_duration=60).json()["lease_id"]
    got = threading.Event()

    def reserve() -> None:
        with reserve_llm(settings, 1):
            got.set()

    caplog.set_level(logging.WARNING, logger="chronicle.llm")
    # Prefect's own services log there; the waits it times out on purpose must not read as errors.
    prefect_errors: list[logging.LogRecord] = []
    collect = logging.Handler(logging.ERROR)
    collect.emit = prefect_errors.append  # type: ignore[method-assign]
    logging.getLogger("prefect._internal.concurrency").addHandler(collect)
    waiter = threading.Thread(target=reserve, daemon=True)
    waiter.start()
    deadline = time.monotonic() + 120
    while not any("waiting for 1 slot(s)" in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
        time.sleep(0.1)
    said = next(r.getMessage() for r in caplog.records if "waiting for" in r.getMessage())
    assert f"'{LIMIT_NAME}' (1 of 1 held by other runs)" in said and "killed" in said
    assert not got.is_set()
    with get_client(sync_client=True) as client:
        client.release_concurrency_slots_with_lease(lease)
    assert got.wait(120)
    waiter.join(60)
    logging.getLogger("prefect._internal.concurrency").removeHandler(collect)
    assert not prefect_errors, [r.getMessage()[:300] for r in prefect_errors]


def _limit(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(f"{url}/v2/concurrency_limits/llm", timeout=30) as resp:
        return json.loads(resp.read())


@pytest.mark.slow
def test_slots_of_a_killed_run_come_back_after_the_server_was_killed_too(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "CHRONICLE_HOME": str(tmp_path / "home"),
            "CHRONICLE_WARM": "0", "CHRONICLE_LLM_CONCURRENCY": "2",
            # The repossessor looks for expired leases every 15 s by default: once a second here, so the test
            # waits for the lease to end, not for the service's next turn. The lease is still the product's.
            "PREFECT_SERVER_SERVICES_REPOSSESSOR_LOOP_SECONDS": "1"}
    state_file = tmp_path / "prefect" / "chronicle" / "server.json"
    holder = None
    try:
        started = subprocess.run([CHRONICLE, "server", "start"], env=env, capture_output=True, text=True,
                                 timeout=400)
        assert started.returncode == 0, started.stderr
        server = json.loads(state_file.read_text())
        holder = subprocess.Popen([sys.executable, "-c", HOLDER], env={**env, "PREFECT_API_URL": server["url"]},
                                  stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "prefect"
        assert _limit(server["url"])["active_slots"] == 2
        # The backfill and the server die together (a power cut, an OOM kill, `kill -9` of both).
        holder.kill()
        holder.wait(30)
        os.killpg(server["pid"], signal.SIGKILL)
        psutil.Process(server["pid"]).wait(30)
        killed = time.monotonic()
        again = subprocess.run([CHRONICLE, "server", "start"], env=env, capture_output=True, text=True, timeout=400)
        assert again.returncode == 0, again.stderr
        url = json.loads(state_file.read_text())["url"]
        # A lease of a minute, found again on disk by the restarted server and revoked by its repossessor (every
        # 15 s deployed, every second here): back well within Prefect's default five-minute lease, and not never.
        while (taken := _limit(url)["active_slots"]) != 0:
            assert time.monotonic() - killed < 200, f"{taken} llm slot(s) still taken"
            time.sleep(1)
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
        subprocess.run([CHRONICLE, "server", "stop"], env=env, capture_output=True, timeout=120)

"""Issue 26.4: a backfill whose worker is killed (kill -9 of the worker and its flow-run process, as a machine
dying) is shown Crashed by Prefect within a minute — the `chronicle-zombie-runs` automation `chronicle setup`
created acts on the lapsed heartbeats — and the next backfill starts without waiting for the dead run's slot.
The deployed topology of tests/lake/test_multiworker.py: Prefect on PostgreSQL, two process workers."""

from __future__ import annotations

import contextlib
import time

import pytest

from tests.lake.test_multiworker import Pool, _children, _one_version_per_week, _rows, inputs, pool  # noqa: F401

pytestmark = pytest.mark.slow


def _crashed_within(client, run_id, since: float, limit: float) -> float:
    while True:
        state = client.read_flow_run(run_id).state
        waited = time.monotonic() - since
        if state.name == "Crashed":
            return waited
        assert waited < limit, f"run {run_id} still {state.name} {waited:.0f}s after its worker was killed"
        time.sleep(1)  # the state lives in the API: asked once a second


def test_killed_parent_shows_crashed_and_the_next_backfill_takes_its_slot(pool: Pool) -> None:  # noqa: F811 - the imported fixture
    import psutil
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    settings = pool.settings
    with get_client(sync_client=True) as client:
        names = [a.name for a in client.read_automations_by_name("chronicle-zombie-runs")]
        assert names == ["chronicle-zombie-runs"]  # made by `chronicle setup` in the fixture
        run = run_deployment("backfill-weeks/backfill-weeks", timeout=0,
                             parameters={"project_id": "XH201", "max_workers": 1})
        deadline = time.monotonic() + 600
        while not _rows(settings, f"SELECT 1 FROM weekly_reports WHERE flow_run_id = '{run.id}'"):
            assert time.monotonic() < deadline, "the parent never wrote a week"
            time.sleep(0.2)  # polling the lake for an event (a week written), not a fixed wait
        [victim] = pool.ran_on(client.read_flow_run(run.id).name)
        flow_procs = psutil.Process(victim.proc.pid).children(recursive=True)
        victim.kill()
        for proc in flow_procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        killed = time.monotonic()
        waited = _crashed_within(client, run.id, killed, limit=60)
        print(f"parent shown Crashed {waited:.0f}s after its worker was killed")

        # The deployment allows one run at a time: the dead run's slot is free, so the next one runs at once
        # (on the surviving worker) instead of waiting in AwaitingConcurrencySlot.
        for child in _children(client, run.id):  # let the orphaned shard finish or die first
            while not client.read_flow_run(child.id).state.is_final() and time.monotonic() < deadline:
                time.sleep(1)
        again = run_deployment("backfill-weeks/backfill-weeks", timeout=600, poll_interval=1,
                               parameters={"project_id": "XH201", "max_workers": 1, "only_missing": True})
        history = [s.name for s in client.read_flow_run_states(again.id)]
    assert again.state is not None and again.state.is_completed(), again.state
    assert "AwaitingConcurrencySlot" not in history, history
    assert _one_version_per_week(settings) >= len(pool.with_entries)
    assert {w for w, in _rows(settings, "SELECT week_number FROM weekly_reports WHERE entry_count > 0")} == \
        pool.with_entries

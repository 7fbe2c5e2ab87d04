"""`chronicle setup`'s automations against the session's real Prefect server, notifications into a real HTTP sink.

Each trigger fires from the events Prefect itself emits when a deployment run changes state (or, for the
backfill, the custom event the flow's hook emits); the notification block POSTs to the sink.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from chronicle.deployments import automations
from chronicle.settings import Settings
from chronicle.weekly.outcome import WeekOutcome
from tests.ops.sink import Sink, http_sink


@pytest.fixture()
def sink() -> Iterator[Sink]:
    with http_sink() as s:
        yield s


@pytest.fixture()
def client():
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as c:
        yield c
        # The session server is shared: leave no automation behind to act on other tests' runs.
        for name in automations.NAMES:
            for a in c.read_automations_by_name(name):
                c.delete_automation(a.id)


def _deployment(client, flow_name: str, limit: int | None = None) -> uuid.UUID:
    from prefect.client.schemas.objects import ConcurrencyLimitStrategy, ConcurrencyOptions

    flow_id = client.create_flow_from_name(flow_name)
    options = ConcurrencyOptions(collision_strategy=ConcurrencyLimitStrategy.ENQUEUE) if limit else None
    return client.create_deployment(flow_id=flow_id, name=f"t-{uuid.uuid4().hex[:8]}", concurrency_limit=limit,
                                    concurrency_options=options)


def _set(client, run_id, state) -> str:
    return client.set_flow_run_state(run_id, state, force=True).status.value


def _wait_state(client, run_id, name: str, timeout: float) -> float:
    """Seconds until the run's state is `name` (asks the API once a second: the state lives there)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if client.read_flow_run(run_id).state.name == name:
            return time.monotonic() - start
        time.sleep(1)
    raise AssertionError(f"run {run_id} still {client.read_flow_run(run_id).state.name} after {timeout}s")


def test_setup_is_idempotent_and_check_lists_everything(home, sink, client, monkeypatch):
    from chronicle.deployments.setup import check_setup, run_setup

    settings = Settings(alert_webhook_url=sink.url + "/alerts")
    lines, ok = check_setup(settings)
    assert not ok and any("MISSING" in line for line in lines)
    first = run_setup(settings)
    second = run_setup(settings)
    assert f"automation {automations.RUN_FAILED!r} created" in first
    assert f"automation {automations.RUN_FAILED!r} already up to date" in second
    for name in automations.NAMES:
        assert len(client.read_automations_by_name(name)) == 1, name
    lines, ok = check_setup(settings)
    assert ok, lines
    assert any(f"automation {automations.WEEKLY_OVERDUE!r}: enabled" in line for line in lines)
    assert not any(sink.url in line for line in lines)  # the webhook URL is a secret: never printed

    from typer.testing import CliRunner

    from chronicle.cli.main import app

    monkeypatch.setenv("CHRONICLE_ALERT_WEBHOOK_URL", sink.url + "/alerts")
    result = CliRunner().invoke(app, ["setup", "--check"])
    assert result.exit_code == 0, result.output
    assert "automation 'chronicle-run-failed': enabled" in result.output and sink.url not in result.output


def test_failed_deployment_run_notifies(home, sink, client):
    from prefect.states import Failed, Running

    automations.ensure_automations(Settings(alert_webhook_url=sink.url + "/alerts"), client)
    run = client.create_flow_run_from_deployment(_deployment(client, "ingest-logs"))
    _set(client, run.id, Running())
    _set(client, run.id, Failed(message="deliberately broken"))
    body = sink.wait_for(lambda b: isinstance(b, dict) and str(run.name) in b.get("body", ""), timeout=60)
    assert "Failed" in body["subject"] and "deliberately broken" in body["body"]
    assert body["source"] == "chronicle"


def test_weekly_not_completed_by_deadline_notifies(home, sink, client):
    from prefect.states import Completed, Running

    settings = Settings(alert_webhook_url=sink.url + "/alerts", alert_weekly_deadline="10s")
    automations.ensure_automations(settings, client)
    deployment = _deployment(client, "weekly-chronicle")
    late = client.create_flow_run_from_deployment(deployment)  # no worker ever takes it
    on_time = client.create_flow_run_from_deployment(deployment)
    _set(client, on_time.id, Running())
    _set(client, on_time.id, Completed())
    started = time.monotonic()
    body = sink.wait_for(lambda b: isinstance(b, dict) and str(late.id) in b.get("body", ""), timeout=90)
    assert time.monotonic() - started >= 5  # proactive: only after the deadline passed
    assert "has not completed by its deadline" in body["subject"]
    assert not sink.matching(lambda b: isinstance(b, dict) and str(on_time.id) in b.get("body", ""))


def test_backfill_with_failed_or_review_weeks_notifies(home, sink, client):
    from prefect.states import Completed

    from chronicle.services.alerts import backfill_attention

    automations.ensure_automations(Settings(alert_webhook_url=sink.url + "/alerts"), client)
    run = client.create_flow_run_from_deployment(_deployment(client, "backfill-weeks"))
    rows = [WeekOutcome("XH201", 202601, "generated", "offline", 10, needs_review=True),
            WeekOutcome("XH201", 202602, "failed", "offline", 10, message="endpoint down"),
            WeekOutcome("XH201", 202603, "cached", "offline", 10)]
    backfill_attention(None, run, Completed(data=rows, message="3 weeks"))
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all()
    body = sink.wait_for(lambda b: isinstance(b, dict) and "needs attention" in b.get("subject", ""), timeout=60)
    assert "1 week(s) failed, 1 need review (3 in all)" in body["body"]


def test_dead_run_is_marked_crashed_and_frees_its_slot(home, client):
    """A deployment run whose heartbeats stop becomes Crashed, and the deployment's one slot is free again."""
    from prefect.events import emit_event
    from prefect.events.worker import EventsWorker
    from prefect.states import Pending, Running

    automations.ensure_automations(Settings(zombie_after_s=31), client)
    deployment = _deployment(client, "backfill-weeks", limit=1)
    dead = client.create_flow_run_from_deployment(deployment)
    assert _set(client, dead.id, Pending()) == "ACCEPT"
    assert _set(client, dead.id, Running()) == "ACCEPT"
    # The last heartbeat the killed process sent, as the flow engine emits it.
    emit_event(event="prefect.flow-run.heartbeat",
               resource={"prefect.resource.id": f"prefect.flow-run.{dead.id}", "prefect.resource.name": dead.name},
               related=[{"prefect.resource.id": f"prefect.flow.{dead.flow_id}", "prefect.resource.role": "flow",
                         "prefect.resource.name": "backfill-weeks"},
                        {"prefect.resource.id": f"prefect.deployment.{deployment}",
                         "prefect.resource.role": "deployment"}])
    # A second one killed after it was set Running but before its first heartbeat: only the server's own
    # Running event stands for it.
    unbeaten = client.create_flow_run_from_deployment(_deployment(client, "backfill-weeks"))
    assert _set(client, unbeaten.id, Pending()) == "ACCEPT"
    assert _set(client, unbeaten.id, Running()) == "ACCEPT"
    EventsWorker.drain_all()
    waited = _wait_state(client, dead.id, "Crashed", timeout=90)
    assert waited < 60
    assert _wait_state(client, unbeaten.id, "Crashed", timeout=60) < 60
    following = client.create_flow_run_from_deployment(deployment)
    assert client.set_flow_run_state(following.id, Pending()).status.value == "ACCEPT"  # not AwaitingConcurrencySlot
    assert client.read_flow_run(following.id).state.name == "Pending"

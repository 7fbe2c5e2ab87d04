"""Prefect automations `chronicle setup` creates: alerts for failed, dead, overdue and doubtful runs.

The pipeline says itself when something is wrong, through Prefect's own automations (so the UI lists them,
with their history, under Automations) and a notification block the site chooses:

- `chronicle-run-failed`: a flow run of any Chronicle deployment ends Failed or Crashed (reactive).
- `chronicle-weekly-overdue`: a weekly-chronicle run has not Completed by the deadline after its schedule
  (proactive: fires on the *absence* of the Completed event; default Monday 09:00 in the configured zone).
- `chronicle-backfill-attention`: a backfill finished with failed weeks or weeks needing review (the flow emits
  the custom event `chronicle.backfill.needs-attention`, see services/alerts.py).
- `chronicle-zombie-runs`: a run whose heartbeats stopped (its process was killed, its machine died) is set
  Crashed, which frees its deployment's concurrency slot (Prefect's documented zombie-flow automation).

Each is created or replaced by name, so `chronicle setup` can run again after a setting changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from chronicle.deployments.definitions import DEPLOYMENTS, by_name
from chronicle.ops import deadline_window
from chronicle.services.alerts import BACKFILL_EVENT
from chronicle.settings import Settings

if TYPE_CHECKING:
    from prefect.automations import AutomationCore
    from prefect.client.orchestration import SyncPrefectClient

ALERT_BLOCK_NAME = "chronicle-alerts"
"""The Custom Webhook block `alert_webhook_url` is stored in."""

RUN_FAILED = "chronicle-run-failed"
WEEKLY_OVERDUE = "chronicle-weekly-overdue"
BACKFILL_ATTENTION = "chronicle-backfill-attention"
ZOMBIE_RUNS = "chronicle-zombie-runs"
NAMES = (RUN_FAILED, WEEKLY_OVERDUE, BACKFILL_ATTENTION, ZOMBIE_RUNS)

_RUN_BODY = ("Flow run {{ flow_run.name }} of {{ flow.name }} is {{ flow_run.state.name }}: "
             "{{ flow_run.state.message }}\n{{ flow_run|ui_url }}")


@dataclass(frozen=True)
class AutomationStatus:
    """One line of `chronicle setup --check`."""

    name: str
    exists: bool
    enabled: bool
    detail: str

    def line(self) -> str:
        state = ("enabled" if self.enabled else "PAUSED") if self.exists else "MISSING"
        return f"automation {self.name!r}: {state}" + (f" — {self.detail}" if self.detail else "")


def chronicle_flow_names() -> list[str]:
    return sorted({spec.flow_name for spec in DEPLOYMENTS})


def _deployment_runs_of(flow_names: list[str]) -> list[dict[str, Any]]:
    # Both must hold: the run belongs to a deployment (a run started by hand from a terminal already shows its
    # failure there) and its flow is one of Chronicle's (a shared server runs other teams' flows too).
    return [{"prefect.resource.id": "prefect.deployment.*"},
            {"prefect.resource.role": "flow", "prefect.resource.name": flow_names}]


def notification_block_id(settings: Settings, client: SyncPrefectClient) -> tuple[Any, str] | None:
    """(block document id, what was done) of the notification target, saving the webhook block if needed;
    None when neither `alert_webhook_url` nor `alert_block` is set."""
    if settings.alerts.block:
        slug, _, name = settings.alerts.block.partition("/")
        if not name:
            raise ValueError(f"alert_block {settings.alerts.block!r}: expected <block-type-slug>/<name>, "
                             "e.g. slack-webhook/ops")
        doc = client.read_block_document_by_name(name=name, block_type_slug=slug)
        return doc.id, f"notification block {settings.alerts.block!r} (existing)"
    if settings.alerts.webhook_url is None:
        return None
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    block = CustomWebhookNotificationBlock(
        name="Chronicle alerts", url=settings.alerts.webhook_url.get_secret_value(), method="POST",
        json_data={"subject": "{{subject}}", "body": "{{body}}", "source": "chronicle"})
    block_id = block.save(ALERT_BLOCK_NAME, overwrite=True, client=client)
    return block_id, f"notification block 'custom-webhook/{ALERT_BLOCK_NAME}' saved (URL from alert_webhook_url)"


def wanted(settings: Settings, block_id: Any | None) -> list[AutomationCore]:
    """The automations for these settings; the alerting ones only when there is a notification target."""
    names = chronicle_flow_names()
    out = [_zombie_runs(settings, names)]
    if block_id is None:
        return out
    return [*out, _run_failed(names, block_id), _weekly_overdue(settings, block_id), _backfill_attention(block_id)]


def _zombie_runs(settings: Settings, names: list[str]) -> AutomationCore:
    from prefect.automations import AutomationCore
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import EventTrigger, Posture

    return AutomationCore(
        name=ZOMBIE_RUNS,
        description=f"Chronicle: a flow run with no heartbeat for {settings.alerts.zombie_after_s}s is marked Crashed "
                    "(its process or machine died), which frees its concurrency slot. Deployment "
                    "runs beat every 30 s (PREFECT_FLOWS_HEARTBEAT_FREQUENCY in RUN_ENV, docs/operating.md).",
        tags=["chronicle"],
        trigger=EventTrigger(
            match={"prefect.resource.id": "prefect.flow-run.*"},
            # Deployment runs only: they get PREFECT_FLOWS_HEARTBEAT_FREQUENCY=30 from RUN_ENV; a run started
            # from a terminal beats every 180 s (Prefect's default) and would be "dead" between two beats.
            match_related=_deployment_runs_of(names),
            # Running starts the clock too: a run killed before its first heartbeat (the engine beats only once
            # the flow is under way) would otherwise never be matched and stay Running, holding its slot.
            after={"prefect.flow-run.heartbeat", "prefect.flow-run.Running"},
            expect={"prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Failed",
                    "prefect.flow-run.Cancelled", "prefect.flow-run.Crashed"},
            for_each={"prefect.resource.id"}, posture=Posture.Proactive, threshold=1,
            within=timedelta(seconds=settings.alerts.zombie_after_s)),
        actions=[ChangeFlowRunState(state=StateType.CRASHED, name="Crashed",
                                    message=f"No heartbeat for {settings.alerts.zombie_after_s}s: the run's process "
                                            "is gone (chronicle-zombie-runs automation)")],
    )


def _alert(block_id: Any, name: str, description: str, trigger: Any, subject: str, body: str) -> AutomationCore:
    """An automation that notifies the site's block when its trigger fires (subject and body: Prefect templates)."""
    from prefect.automations import AutomationCore
    from prefect.events.actions import SendNotification

    return AutomationCore(name=name, description=description, tags=["chronicle"], trigger=trigger,
                          actions=[SendNotification(block_document_id=block_id, subject=subject, body=body)])


def _run_failed(names: list[str], block_id: Any) -> AutomationCore:
    from prefect.events.schemas.automations import EventTrigger, Posture

    trigger = EventTrigger(
        match={"prefect.resource.id": "prefect.flow-run.*"},
        match_related=_deployment_runs_of(names),
        expect={"prefect.flow-run.Failed", "prefect.flow-run.Crashed"},
        posture=Posture.Reactive, threshold=1, within=timedelta(0))
    return _alert(block_id, RUN_FAILED, "Chronicle: a run of a Chronicle deployment ended Failed or Crashed.",
                  trigger, "Chronicle: {{ flow.name }} run {{ flow_run.state.name }}", _RUN_BODY)


def _weekly_overdue(settings: Settings, block_id: Any) -> AutomationCore:
    from prefect.events.schemas.automations import EventTrigger, Posture

    weekly = by_name("weekly-chronicle")
    cron = weekly.schedules(settings)[0].cron or "0 2 * * 1"
    window = deadline_window(settings.alerts.weekly_deadline, cron, settings.timezone)
    trigger = EventTrigger(
        match={"prefect.resource.id": "prefect.flow-run.*"},
        match_related=_deployment_runs_of([weekly.flow_name]),
        # The run's first event starts its clock: Scheduled (a run made from the UI or the API), Late
        # (a cron run no worker picked up) or Pending/Running (a worker took it).
        after={"prefect.flow-run.Scheduled", "prefect.flow-run.Late", "prefect.flow-run.Pending",
               "prefect.flow-run.Running"},
        expect={"prefect.flow-run.Completed"},
        for_each={"prefect.resource.id"}, posture=Posture.Proactive, threshold=1, within=window)
    return _alert(
        block_id, WEEKLY_OVERDUE,
        f"Chronicle: a weekly-chronicle run not Completed {settings.alerts.weekly_deadline!r} "
        f"({int(window.total_seconds())}s after it was scheduled, {settings.timezone}).",
        trigger, "Chronicle: the weekly chronicle has not completed by its deadline",
        f"No Completed weekly-chronicle run by {settings.alerts.weekly_deadline} ({settings.timezone})"
        ": is a worker running? `chronicle status` says what is missing.\n{{ event.resource.id }}")


def _backfill_attention(block_id: Any) -> AutomationCore:
    from prefect.events.schemas.automations import EventTrigger, Posture

    trigger = EventTrigger(match={"prefect.resource.id": "chronicle.backfill.*"}, expect={BACKFILL_EVENT},
                           posture=Posture.Reactive, threshold=1, within=timedelta(0))
    return _alert(
        block_id, BACKFILL_ATTENTION, "Chronicle: a backfill ended with failed weeks or weeks needing review.",
        trigger, "Chronicle: backfill {{ event.resource.name }} needs attention",
        "{{ event.payload.failed }} week(s) failed, {{ event.payload.needs_review }} need review "
        "({{ event.payload.weeks }} in all): {{ event.payload.message }}")


def ensure_automations(settings: Settings, client: SyncPrefectClient) -> list[str]:
    """Create Chronicle's automations, or replace the ones that exist by name; returns what happened."""
    target = notification_block_id(settings, client)
    done = [target[1]] if target else ["alerts: no notification target (CHRONICLE_ALERT_WEBHOOK_URL or "
                                       "CHRONICLE_ALERT_BLOCK), so only the zombie-run automation"]
    for automation in wanted(settings, target[0] if target else None):
        existing = client.read_automations_by_name(automation.name)
        for extra in existing[1:]:  # two setups racing each created one: keep one
            client.delete_automation(extra.id)
        if existing and _same(existing[0], automation):
            done.append(f"automation {automation.name!r} already up to date")
        elif existing:
            client.update_automation(existing[0].id, automation)
            done.append(f"automation {automation.name!r} updated")
        else:
            client.create_automation(automation)
            done.append(f"automation {automation.name!r} created")
    return done


def _same(existing: Any, automation: AutomationCore) -> bool:
    # The server gives the trigger an id of its own; everything else must match what setup would write.
    def norm(a: Any) -> Any:
        data = a.model_dump(mode="json", include={"name", "description", "enabled", "tags", "trigger", "actions"})
        data["trigger"].pop("id", None)
        return _unordered(data)

    return norm(existing) == norm(automation)


def _unordered(value: Any) -> Any:
    # `expect` / `after` are sets: dumped as lists in an order that depends on the hash seed and on insertion
    # history, so the server's copy and ours can list the same events differently (setup then said "updated").
    if isinstance(value, dict):
        return {k: _unordered(v) for k, v in value.items()}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sorted(value)
    if isinstance(value, list):
        return [_unordered(v) for v in value]
    return value


def check_automations(client: SyncPrefectClient) -> list[AutomationStatus]:
    """What exists on the server, for `chronicle setup --check`."""
    out = []
    for name in NAMES:
        found = client.read_automations_by_name(name)
        out.append(AutomationStatus(name, True, found[0].enabled, found[0].description) if found
                   else AutomationStatus(name, False, False, ""))
    return out

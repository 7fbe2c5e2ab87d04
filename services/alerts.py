"""Events Chronicle's automations listen to (deployments/automations.py), emitted from flow hooks.

A backfill that stored most weeks but failed some, or wrote weeks a reader must check, is not an outright
failure an operator would otherwise hear about: it emits `chronicle.backfill.needs-attention`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from chronicle.services.run_tracking import RUN_HOOKS
from chronicle.weekly.outcome import WeekOutcome, WeeksFailedError

BACKFILL_EVENT = "chronicle.backfill.needs-attention"
log = logging.getLogger("chronicle.alerts")


def attention_payload(rows: Sequence[WeekOutcome], message: str | None) -> dict[str, Any] | None:
    """The event's payload when some week failed or needs review, else None."""
    failed = sum(1 for r in rows if r.outcome == "failed")
    review = sum(1 for r in rows if r.needs_review and r.outcome != "failed")
    if not failed and not review:
        return None
    return {"weeks": len(rows), "failed": failed, "needs_review": review, "message": (message or "")[:500],
            "failed_weeks": [f"{r.project} {r.week}" for r in rows if r.outcome == "failed"][:50],
            "review_weeks": [f"{r.project} {r.week}" for r in rows if r.needs_review][:50]}


def _rows_of(state: Any) -> list[WeekOutcome]:
    try:
        result = state.result(raise_on_failure=False)
    except Exception:  # the result was not kept (e.g. a crash): nothing to count
        return []
    if isinstance(result, WeeksFailedError):
        return list(result.rows)
    if isinstance(result, list):
        return [r for r in result if isinstance(r, WeekOutcome)]
    return []


def backfill_attention(flow: Any, flow_run: Any, state: Any) -> None:
    """`on_completion` / `on_failure` hook of the backfill flow: emit the event when weeks need someone."""
    try:
        payload = attention_payload(_rows_of(state), state.message)
        if payload is None:
            return
        from prefect.events import emit_event

        emit_event(
            event=BACKFILL_EVENT,
            resource={"prefect.resource.id": f"chronicle.backfill.{flow_run.id}",
                      "prefect.resource.name": flow_run.name or str(flow_run.id)},
            related=[{"prefect.resource.id": f"prefect.flow-run.{flow_run.id}", "prefect.resource.role": "flow-run",
                      "prefect.resource.name": flow_run.name or ""}],
            payload=payload,
        )
    except Exception:  # an alert that cannot be sent must not change the run's outcome
        log.warning("could not emit %s for run %s", BACKFILL_EVENT, getattr(flow_run, "id", "?"), exc_info=True)


BACKFILL_HOOKS: dict[str, list[Any]] = {
    **RUN_HOOKS,
    "on_completion": [*RUN_HOOKS.get("on_completion", []), backfill_attention],
    "on_failure": [*RUN_HOOKS.get("on_failure", []), backfill_attention],
}
"""`@flow(..., **BACKFILL_HOOKS)`: every flow's hooks plus the needs-attention event."""

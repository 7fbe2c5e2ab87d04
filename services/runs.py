"""Run bookkeeping shared by every flow: a `pipeline_runs` row that ends COMPLETED or FAILED."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prefect.runtime import flow_run

from chronicle.distill.redact import Redactor, redact_value
from chronicle.settings import Settings
from storage import runs
from storage.db import tag_commits, write


def current_flow_run_id() -> str:
    """The Prefect flow run id, or a fresh id when called outside a flow (plain Python use)."""
    return str(flow_run.get_id() or uuid.uuid4())


@contextmanager
def tracked_run(settings: Settings, flow_name: str, parameters: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Record the run; the caller fills the yielded dict with counts for the final row.

    Parameters and the failure message are redacted: paths name files (`…-13912345678.md`) and an exception
    may quote what it failed on; `pipeline_runs` is read by analysts and printed by `chronicle runs`.
    """
    run_id = current_flow_run_id()
    counts: dict[str, Any] = {}
    redactor = Redactor.build(settings.redact_extra_patterns)
    shown = redact_value(parameters, redactor)
    # Every lake commit of this run records its flow_run_id (DuckLake snapshots -> runs, for time travel).
    with tag_commits(flow_run_id=run_id, flow=flow_name):
        write(settings, lambda conn: runs.run_started(conn, run_id, flow_name, shown))
        try:
            yield counts
        except BaseException as exc:
            message = redactor.redact(f"{type(exc).__name__}: {exc}"[:2000])
            write(settings, lambda conn: runs.run_finished(conn, run_id, "FAILED", counts, message))
            raise
        write(settings, lambda conn: runs.run_finished(conn, run_id, "COMPLETED", counts))

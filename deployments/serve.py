"""`chronicle serve`: one long-running process that schedules and runs every deployment on this machine.

`prefect.serve` registers the deployments (schedules included) with the Prefect API, polls it for
scheduled or UI-triggered runs, and executes each run in a subprocess of its own, so a crashing run
never takes the server down. Separate processes means DuckDB sees several writers; `chronicle.storage.db`
serialises their short write windows with a file lock.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from chronicle.deployments.definitions import RUN_ENV, available
from chronicle.settings import Settings

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment

log = logging.getLogger("chronicle.deployments")


def build_deployments(settings: Settings) -> tuple[list[RunnerDeployment], list[str]]:
    """(runner deployments for every flow that exists, full names of those whose flow is not written yet)."""
    specs, missing = available()
    return [spec.to_runner_deployment(settings) for spec in specs], missing


def serve_all(settings: Settings, *, limit: int | None = None) -> None:
    """Serve every deployment until interrupted (Ctrl-C / SIGTERM pauses their schedules on the way out)."""
    from prefect import serve

    from chronicle.deployments.setup import ensure_concurrency_limits

    # Flow runs are subprocesses of this one. Prefect builds their environment from os.environ *and then*
    # from this process's settings, so both must carry RUN_ENV (the CLI has already loaded quieter ones).
    os.environ.update(RUN_ENV)
    deployments, missing = build_deployments(settings)
    for name in missing:
        log.warning("not serving %s: its flow module does not exist in this checkout", name)
    if not settings.ingest.source_paths:
        log.warning("source_paths is empty: the ingest schedule is paused until CHRONICLE_SOURCE_PATHS is set")
    # Flows take slots of `llm`; a limit that does not exist would not limit anything.
    from chronicle.services.prefect_client import prefect_client

    with prefect_client() as client:
        for line in ensure_concurrency_limits(settings, client):
            log.info(line)
    from prefect.settings import temporary_settings

    with temporary_settings(updates=_run_settings()):
        serve(*deployments, limit=limit)


def _run_settings() -> dict[Any, Any]:
    """RUN_ENV as Prefect settings objects, for `temporary_settings`."""
    import prefect.settings

    return {getattr(prefect.settings, name): value for name, value in RUN_ENV.items()}

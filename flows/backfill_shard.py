"""Flow `backfill-shard`: one child run of a backfill spread over the work pool's workers.

Started by `backfill-weeks` (never by hand) when `CHRONICLE_BACKFILL_SPREAD` is set, through the deployment
`backfill-shard/backfill-shard`. It writes its shard of the backfill's weeks; its outcome
rows go back to the parent, which publishes the backfill's one outcome table (tasks/spread.py).
"""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run

from chronicle.param_checks import name_part
from chronicle.services.run_tracking import RUN_HOOKS, tracked_run
from chronicle.settings import load_settings
from chronicle.tasks.spread import shard
from chronicle.weekly.outcome import WeekOutcome


def shard_run_name() -> str:
    """`backfill-shard-<batch>-<n>`; never raises, whatever the parameters."""
    params = flow_run.parameters
    return f"backfill-shard-{name_part(params.get('batch'), 'none')}-{name_part(params.get('participant'), 'none')}"


@flow(name="backfill-shard", flow_run_name=shard_run_name, log_prints=False, **RUN_HOOKS)
def backfill_shard(batch: str, weeks: dict[str, list[int]], participant: int, force: bool = False,
                   overwrite_edited: bool = False, max_workers: int = 0) -> list[WeekOutcome]:
    """Write this run's shard of a spread backfill.

    Args:
        batch: The parent backfill's flow run id (names the batch's claims).
        weeks: Project id -> ISO week numbers (YYYYWW) of this run's shard.
        participant: This run's shard's number in the batch (the parent's is 0).
        force: As the parent's `force`: regenerate current reports too.
        overwrite_edited: As the parent's `overwrite_edited`.
        max_workers: Weeks in flight at once in this run; 0 = the backfill_max_workers setting.
    """
    settings = load_settings()
    params = {"batch": batch, "participant": participant, "force": force,
              "overwrite_edited": overwrite_edited, "max_workers": max_workers,
              "weeks": sum(len(numbers) for numbers in weeks.values())}
    with tracked_run(settings, "backfill-shard", params) as counts:
        return shard(settings, batch, weeks, participant, title=flow_run.name or "backfill-shard",
                     force=force, overwrite_edited=overwrite_edited, max_workers=max_workers, counts=counts)

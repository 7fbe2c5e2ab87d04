"""How a run's weeks are cut into task runs: few enough task runs that the orchestration (a task run's
states, events and logs on the API server, a write window) is paid per group, not per week; enough weeks
in flight at once (threads inside each group) to keep the LLM slots or the CPU busy."""

from __future__ import annotations

import math
from typing import NamedTuple

from chronicle.settings import Settings

GROUPS_IN_FLIGHT = 2
"""Group task runs at once: while one finishes its last weeks (its threads idle), the other keeps going."""
TARGET_GROUPS = 8
"""Groups per run when the run is large: the last ones end close together (a group is a run's tail)."""
MAX_WEEKS_PER_TASK = 50


def weeks_in_flight(settings: Settings, max_workers: int | None) -> int:
    """Weeks one run writes at once: `max_workers`, else the backfill_max_workers setting, else four per LLM
    slot — a week waits for its report's commit (group-committed, serialised) after its call, and with two per
    slot a slow write window left slots idle (bench/backfill at 500 ms)."""
    return max(1, max_workers or settings.weekly.backfill_max_workers or 4 * settings.llm.concurrency)


class Grouping(NamedTuple):
    weeks_per_task: int
    threads_per_task: int
    tasks_in_flight: int


def grouping(weeks: int, workers: int, override: int = 0) -> Grouping:
    """For `weeks` weeks with `workers` weeks in flight; `override` (> 0, CHRONICLE_WEEKS_PER_TASK) wins."""
    workers = max(1, workers)
    in_flight = min(GROUPS_IN_FLIGHT, workers)
    threads = math.ceil(workers / in_flight)
    size = override if override > 0 else max(threads, min(MAX_WEEKS_PER_TASK, math.ceil(max(1, weeks) / TARGET_GROUPS)))
    threads = min(threads, size)
    return Grouping(size, threads, math.ceil(workers / threads))


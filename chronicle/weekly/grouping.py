"""How many weeks one task run writes: few enough to keep every worker busy, many enough that the
orchestration (a task run's events and logs, a write window) is paid per group, not per week."""

from __future__ import annotations

import math

GROUPS_PER_WORKER = 4
"""Groups per worker slot: the last groups of a run finish close together (a small group ends the run)."""
MAX_WEEKS_PER_TASK = 25


def weeks_per_task(weeks: int, workers: int, override: int = 0) -> int:
    """Weeks per task run for `weeks` weeks and `workers` in flight; `override` (> 0) wins."""
    if override > 0:
        return override
    if weeks <= 0:
        return 1
    return max(1, min(MAX_WEEKS_PER_TASK, math.ceil(weeks / (max(1, workers) * GROUPS_PER_WORKER))))

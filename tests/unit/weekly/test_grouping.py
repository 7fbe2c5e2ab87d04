"""How weeks are grouped into task runs (pure logic)."""

from __future__ import annotations

from chronicle.weekly.grouping import MAX_WEEKS_PER_TASK, grouping


def test_weeks_are_grouped_into_few_task_runs_with_every_worker_busy() -> None:
    # 156 weeks, 16 in flight: 8 task runs of 20 weeks, two at a time, 8 threads each (16 weeks in flight).
    g = grouping(156, 16)
    assert (g.weeks_per_task, g.threads_per_task, g.tasks_in_flight) == (20, 8, 2)
    assert g.threads_per_task * g.tasks_in_flight >= 16
    assert grouping(5000, 8).weeks_per_task == MAX_WEEKS_PER_TASK
    assert grouping(1, 8).threads_per_task == 4 and grouping(1, 1) == (1, 1, 1)
    # the override sets the group size; weeks in flight stay what the workers say
    g = grouping(156, 16, override=3)
    assert g.weeks_per_task == 3 and g.threads_per_task * g.tasks_in_flight >= 16

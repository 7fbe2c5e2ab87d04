"""How files are cut into ingest batches and weeks into task runs (pure logic)."""

from __future__ import annotations

from chronicle.ingest.batches import file_batches
from chronicle.weekly.grouping import MAX_WEEKS_PER_TASK, grouping


def test_file_batches_keep_order_and_respect_count_and_bytes() -> None:
    files = [(f"f{i}", 10) for i in range(25)]
    batches = file_batches(files, max_files=10, max_bytes=1_000)
    assert [len(b) for b in batches] == [10, 10, 5]
    assert [f for b in batches for f in b] == [f for f, _ in files]
    # bytes: a batch closes before it would pass max_bytes; a file larger than that is a batch of its own
    sized = [("a", 40), ("b", 40), ("c", 40), ("big", 500), ("d", 1)]
    assert file_batches(sized, max_files=100, max_bytes=100) == [["a", "b"], ["c"], ["big"], ["d"]]
    assert file_batches([], max_files=10) == []


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

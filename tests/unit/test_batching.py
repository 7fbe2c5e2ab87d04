"""How files are cut into ingest batches and weeks into task runs (pure logic)."""

from __future__ import annotations

from chronicle.ingest.batches import file_batches
from chronicle.weekly.grouping import MAX_WEEKS_PER_TASK, weeks_per_task


def test_file_batches_keep_order_and_respect_count_and_bytes() -> None:
    files = [(f"f{i}", 10) for i in range(25)]
    batches = file_batches(files, max_files=10, max_bytes=1_000)
    assert [len(b) for b in batches] == [10, 10, 5]
    assert [f for b in batches for f in b] == [f for f, _ in files]
    # bytes: a batch closes before it would pass max_bytes; a file larger than that is a batch of its own
    sized = [("a", 40), ("b", 40), ("c", 40), ("big", 500), ("d", 1)]
    assert file_batches(sized, max_files=100, max_bytes=100) == [["a", "b"], ["c"], ["big"], ["d"]]
    assert file_batches([], max_files=10) == []


def test_weeks_per_task_scales_with_weeks_and_workers() -> None:
    assert weeks_per_task(1, 8) == 1
    assert weeks_per_task(156, 8) == 5  # 32 groups: four per worker, so the last ones end together
    assert weeks_per_task(300, 2) == MAX_WEEKS_PER_TASK
    assert weeks_per_task(300, 2, override=7) == 7
    assert weeks_per_task(0, 4) == 1

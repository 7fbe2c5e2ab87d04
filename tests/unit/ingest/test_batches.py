"""How files are cut into ingest batches (pure logic)."""

from __future__ import annotations

from chronicle.ingest.batches import file_batches


def test_file_batches_keep_order_and_respect_count_and_bytes() -> None:
    files = [(f"f{i}", 10) for i in range(25)]
    batches = file_batches(files, max_files=10, max_bytes=1_000)
    assert [len(b) for b in batches] == [10, 10, 5]
    assert [f for b in batches for f in b] == [f for f, _ in files]
    # bytes: a batch closes before it would pass max_bytes; a file larger than that is a batch of its own
    sized = [("a", 40), ("b", 40), ("c", 40), ("big", 500), ("d", 1)]
    assert file_batches(sized, max_files=100, max_bytes=100) == [["a", "b"], ["c"], ["big"], ["d"]]
    assert file_batches([], max_files=10) == []

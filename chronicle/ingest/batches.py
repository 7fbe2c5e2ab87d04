"""Files grouped into batches: one read pass, one write window and one task run per batch, not per file."""

from __future__ import annotations

from collections.abc import Sequence

BATCH_BYTES = 64 << 20
"""Bytes of input per batch: a batch is held in memory between its parse and its commit."""


def file_batches(files: Sequence[tuple[str, int]], max_files: int,
                 max_bytes: int = BATCH_BYTES) -> list[list[str]]:
    """(path, size) in order -> consecutive batches of at most `max_files` files and about `max_bytes`.

    A file larger than `max_bytes` is a batch of its own (it is read whole either way); order is kept, so
    the progress of a run follows the order files were found in.
    """
    batches: list[list[str]] = []
    current: list[str] = []
    size = 0
    for path, n in files:
        if current and (len(current) >= max(1, max_files) or size + n > max_bytes):
            batches.append(current)
            current, size = [], 0
        current.append(path)
        size += n
    if current:
        batches.append(current)
    return batches

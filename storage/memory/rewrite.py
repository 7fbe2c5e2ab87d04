"""Rewriting one stored memory in place (a correction): the row with its new text and a fresh vector, in one
commit under the store's write lock. Dedup, supersession and the planner are not involved: a correction is the
truth, not a candidate to merge."""

from __future__ import annotations

from chronicle.memory.dedup import PlannedRow
from chronicle.memory.embedder import embed_redacted
from chronicle.redaction.text import require_redacted
from chronicle.storage.memory import indexes
from chronicle.storage.memory.arrow import to_arrow
from chronicle.storage.memory.schema import StoredMemory
from chronicle.storage.memory.store import MemoryStore


def rewrite_row(store: MemoryStore, row: StoredMemory) -> None:
    """Replace the stored row `row.id` with `row` (its content must be `Redacted`), re-embedded."""
    content, _ = require_redacted([row.content, row.summary], "the memory store")
    vector = embed_redacted(store.embedder, [content])[0]
    # The store's own lock and table (the same as `MemoryStore.upsert`): one writer at a time across processes.
    with store._writing():
        table = store._writable()
        data = to_arrow([PlannedRow(row, vector, False)], table.schema)
        table.merge_insert("id").when_matched_update_all().execute(data)
        indexes.after_write(table, store.settings.memory.ann_min_rows)

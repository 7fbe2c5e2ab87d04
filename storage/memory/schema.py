"""Arrow schema of the LanceDB `memories` table; the typed rows/events it holds live in `chronicle.memory.records`.

Schema history (an older table is upgraded in place by `chronicle.storage.memory.indexes.upgrade`, which adds the
missing columns as nulls — a metadata-only commit, no row is rewritten):

- 1: the first release.
- 2: `absorbed` (every distinct text a merge folded into the row; before it, merged texts were dropped).
- 3: `subject` (whom the memory is about), `superseded_by` / `superseded_at` (a newer memory replaced the fact).
  Upgraded rows read as subject "" (unknown) and current; `chronicle memory reindex` does not fill subjects —
  re-distil the notes (drop the table) to get them.
- 4: `reads_as_order` (the injection screen read the text as an order to the assistant: stored flagged, shown
  with a marker by search, never in a knowledge file without approval). Upgraded rows read as False.
- 5: `packed_row`: a copy of the row's `ROW_COLUMNS` as one JSON string, written with the row
  (`arrow.packed_column`). Search reads its final rows from it: LanceDB's take costs per column (~0.25 ms each
  at 1 M rows), so one column instead of 22 cut a 20-row read from 13.0 to 2.2 ms CPU. Upgraded rows hold
  null and are read from their columns (`chronicle memory reindex`, or any rewrite of a row, fills it).
"""

from __future__ import annotations

import pyarrow as pa

from chronicle.memory.model import EventKind, MemoryEvent
from chronicle.memory.records import SearchHit, StoredMemory
from chronicle.weeks import utc

__all__ = [
    "META_DIM", "META_MODEL", "META_VERSION", "PACKED", "ROW_COLUMNS", "SCHEMA_VERSION", "TABLE", "EventKind",
    "MemoryEvent", "SearchHit", "StoredMemory", "memory_schema", "utc",
]  # fmt: skip

TABLE = "memories"
SCHEMA_VERSION = "5"
META_MODEL = "chronicle.embedding_model"
META_DIM = "chronicle.embedding_dim"
META_VERSION = "chronicle.schema_version"
PACKED = "packed_row"


def memory_schema(model_name: str, dim: int) -> pa.Schema:
    """The table schema; the embedding model and dimension ride along as schema metadata.

    Keeping them in the table's own schema (not a side table) means a reindex that swaps model and
    vectors is one atomic commit: no reader can ever see new vectors with the old model name.
    """
    strings = pa.list_(pa.string())
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("content", pa.string(), nullable=False),
            pa.field("summary", pa.string()),
            pa.field("target_file", pa.string()),
            pa.field("action", pa.string()),
            pa.field("tags", strings),
            pa.field("importance", pa.float64()),
            pa.field("key_info", strings),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("source", pa.string()),
            pa.field("created", pa.timestamp("us", tz="UTC")),
            pa.field("updated", pa.timestamp("us", tz="UTC")),
            pa.field("content_hash", pa.string(), nullable=False),
            # Hashes of every memory folded into this row (its own first): an exact re-send of a
            # near-duplicate that was merged earlier is then a NOOP, which keeps upserts idempotent.
            pa.field("merged_hashes", strings),
            pa.field("language", pa.string()),
            pa.field("source_entry_ids", strings),
            pa.field("fts_text", pa.string()),
            pa.field("flow_run_id", pa.string()),
            # Schema 2: the distinct texts merged into this row (also indexed by full text through fts_text).
            pa.field("absorbed", strings),
            # Schema 3: whom it is about ("" unknown) and, once a newer memory replaced the fact, by what and when.
            pa.field("subject", pa.string()),
            pa.field("superseded_by", pa.string()),
            pa.field("superseded_at", pa.timestamp("us", tz="UTC")),
            # Schema 4: flagged by the injection screen (null in upgraded rows: not flagged).
            pa.field("reads_as_order", pa.bool_()),
            # Schema 5: the display columns again, packed (what search reads; see the module docstring).
            pa.field(PACKED, pa.string()),
        ],
        metadata={META_MODEL: model_name, META_DIM: str(dim), META_VERSION: SCHEMA_VERSION},
    )


# Everything except the vector: what list/get/search return (vectors are large and rarely wanted).
ROW_COLUMNS = [
    "id", "content", "summary", "target_file", "action", "tags", "importance", "key_info", "source",
    "created", "updated", "content_hash", "merged_hashes", "language", "source_entry_ids", "fts_text",
    "flow_run_id", "absorbed", "subject", "superseded_by", "superseded_at", "reads_as_order",
]  # fmt: skip

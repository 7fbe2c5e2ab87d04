"""Arrow schema of the LanceDB `memories` table and the typed rows/events the store hands out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from chronicle.memory.model import Memory, MemoryEvent  # noqa: F401  (MemoryEvent: re-exported)

TABLE = "memories"
SCHEMA_VERSION = "1"
META_MODEL = "chronicle.embedding_model"
META_DIM = "chronicle.embedding_dim"
META_VERSION = "chronicle.schema_version"

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
        ],
        metadata={META_MODEL: model_name, META_DIM: str(dim), META_VERSION: SCHEMA_VERSION},
    )


# Everything except the vector: what list/get/search return (vectors are large and rarely wanted).
ROW_COLUMNS = [
    "id", "content", "summary", "target_file", "action", "tags", "importance", "key_info", "source",
    "created", "updated", "content_hash", "merged_hashes", "language", "source_entry_ids", "fts_text",
    "flow_run_id",
]  # fmt: skip


def utc(ts: datetime) -> datetime:
    """Aware UTC; naive datetimes are taken to be UTC already (that is how Chronicle stores timestamps)."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


@dataclass
class StoredMemory:
    """One row of the `memories` table (without its vector)."""

    id: str
    content: str
    summary: str
    target_file: str
    tags: list[str]
    importance: float
    key_info: list[str]
    source: str
    created: datetime
    updated: datetime | None
    content_hash: str
    language: str
    source_entry_ids: list[str]
    flow_run_id: str | None
    action: str = "append"
    merged_hashes: list[str] = field(default_factory=list)
    fts_text: str = ""

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> StoredMemory:
        return cls(**{name: row.get(name) for name in ROW_COLUMNS} | _defaults(row))

    def to_memory(self) -> Memory:
        """Back to the shared model (e.g. to re-run a knowledge-file sync from the store)."""
        return Memory(
            content=self.content,
            summary=self.summary,
            key_info=self.key_info,
            tags=self.tags,
            importance=self.importance,
            target_file=self.target_file,  # type: ignore[arg-type]
            action=self.action,  # type: ignore[arg-type]
            source=self.source,
            source_entry_ids=self.source_entry_ids,
        )


def _defaults(row: dict[str, Any]) -> dict[str, Any]:
    """Nulls from Arrow -> the dataclass's empty values."""
    out: dict[str, Any] = {}
    for name in ("tags", "key_info", "source_entry_ids", "merged_hashes"):
        out[name] = list(row.get(name) or [])
    for name in ("summary", "target_file", "source", "language", "fts_text"):
        out[name] = row.get(name) or ""
    out["action"] = row.get("action") or "append"
    out["importance"] = float(row.get("importance") or 0.0)
    return out


@dataclass
class SearchHit(StoredMemory):
    """A search result: the memory plus how it scored."""

    score: float = 0.0
    """`search_semantic_weight * semantic + search_importance_weight * importance`."""
    semantic: float = 0.0
    """Fused relevance in [0, 1] (equals `cosine` in dense mode or without a full-text match)."""
    cosine: float = 0.0
    bm25: float | None = None
    fts_rank: int | None = None
    """1-based rank among the full-text matches, None when full text did not find it."""

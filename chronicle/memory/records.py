"""Typed rows of the memory store, shared by the dedup policy (core) and the LanceDB store (storage).

They live in the core so that the merge rule (`chronicle.memory.dedup`) can be a pure function over them;
`chronicle.storage.memory.schema` maps them to and from Arrow.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

__all__ = ["SearchHit", "StoredMemory"]


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
    """Hashes of every memory folded into this row (its own first): re-sending one is a NOOP."""
    absorbed: list[str] = field(default_factory=list)
    """Every distinct text merged into this row besides `content`, in merge order: a merge never loses a text."""
    fts_text: str = ""
    subject: str = ""
    """Whom it is about (schema 3): a normalised name, `user`, or "" when unknown."""
    superseded_by: str = ""
    """Id of the memory that replaced this fact (schema 3); "" while it is current."""
    superseded_at: datetime | None = None
    """When it stopped being current: the successor's `created` (None while current)."""
    reads_as_order: bool = False
    """Schema 4: the text (or a text merged into the row) reads as an order to the assistant (injection screen).
    Search shows it with a marker; null in rows written before schema 4 reads as False."""

    @property
    def current(self) -> bool:
        return not self.superseded_by

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> StoredMemory:
        """From an Arrow row (nulls become the dataclass's empty values; unknown keys are ignored)."""
        names = [f.name for f in fields(StoredMemory)]  # a SearchHit's scores are not columns
        return cls(**{name: row.get(name) for name in names} | _defaults(row))

    def texts(self) -> list[str]:
        """The content and every absorbed text: what this row stands for."""
        return [self.content, *self.absorbed]


def _defaults(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("tags", "key_info", "source_entry_ids", "merged_hashes", "absorbed"):
        out[name] = list(row.get(name) or [])
    for name in ("summary", "target_file", "source", "language", "fts_text", "subject", "superseded_by"):
        out[name] = row.get(name) or ""
    out["action"] = row.get("action") or "append"
    out["importance"] = float(row.get("importance") or 0.0)
    out["reads_as_order"] = bool(row.get("reads_as_order"))
    return out


@dataclass
class SearchHit(StoredMemory):
    """A search result: the memory plus how it scored."""

    score: float = 0.0
    """`semantic * (search_semantic_weight + search_importance_weight * importance)` (`chronicle.memory.search`)."""
    semantic: float = 0.0
    """Fused relevance in [0, 1] (equals `cosine` in dense mode or without a full-text match)."""
    cosine: float = 0.0
    bm25: float | None = None
    fts_rank: int | None = None
    """1-based rank among the full-text matches, None when full text did not find it."""

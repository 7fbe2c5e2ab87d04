"""Rows of the distillation ledgers in DuckDB (`memory_events`, `distill_chunks`, `distill_quarantine`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date


@dataclass(frozen=True)
class EventRow:
    flow_run_id: str
    event: str  # ADD | UPDATE | NOOP | REJECT
    memory_id: str | None
    content_hash: str | None
    target_file: str | None
    importance: float | None
    tags: list[str] = field(default_factory=list)
    similarity: float | None = None
    reason: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class ChunkRecord:
    input_hash: str
    prompt_version: str
    model: str
    chunk_key: str
    note_date: date
    source: str
    entries: int
    memories: int
    rejected: int
    repaired: bool
    memory_ids: list[str]
    flow_run_id: str


@dataclass(frozen=True)
class QuarantineRecord:
    chunk_key: str
    input_hash: str
    prompt_version: str
    model: str
    reason: str
    raw_reply: str | None
    repair_reply: str | None
    flow_run_id: str

"""Turning chunk outcomes and store events into file items, ledger rows and the run summary (pure).

The summary holds counts and file names only — never memory text — because it is shown in Prefect
artifacts, stored in `pipeline_runs.counts` and printed by the CLI.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from chronicle.distill.chunks import Chunk
from chronicle.distill.engine import ChunkOutcome, EngineInfo
from chronicle.distill.knowledge import FileResult, effective_action
from chronicle.distill.records import ChunkRecord, EventRow, QuarantineRecord
from chronicle.distill.sections import Item
from chronicle.memory.model import Memory, MemoryEvent

EVENT_KINDS = ("ADD", "UPDATE", "NOOP", "REJECT")


@dataclass
class Tally:
    entries: int = 0
    chunks: int = 0
    cached: int = 0
    distilled: int = 0
    quarantined: int = 0
    failed: int = 0
    llm_calls: int = 0
    memories: int = 0
    events: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add_outcome(self, outcome: ChunkOutcome) -> None:
        self.llm_calls += outcome.llm_calls
        self.redactions.update(outcome.redactions)
        self.warnings.update(outcome.warnings)
        if outcome.status == "ok":
            self.distilled += 1
            self.memories += len(outcome.memories)
            self.rejected.update(r.reason for r in outcome.rejections)
            self.events["REJECT"] += len(outcome.rejections)
        elif outcome.status == "quarantined":
            self.quarantined += 1
        else:
            self.failed += 1

    def add_file(self, result: FileResult) -> None:
        self.files[result.name] = {"changed": result.changed, "added": result.stats.added,
                                   "already_present": result.stats.present,
                                   "sections_overwritten": result.stats.overwritten_sections,
                                   "backup": result.backup is not None}

    def as_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries, "chunks": self.chunks, "chunks_cached": self.cached,
            "chunks_distilled": self.distilled, "chunks_quarantined": self.quarantined,
            "chunks_failed": self.failed, "llm_calls": self.llm_calls, "memories": self.memories,
            "events": {k: self.events.get(k, 0) for k in EVENT_KINDS}, "rejected": dict(self.rejected),
            "warnings": dict(self.warnings), "redactions": dict(sorted(self.redactions.items())),
            "files": self.files,
        }


def plan_chunk(chunk: Chunk, memories: list[Memory], events: list[MemoryEvent], overwrite_allowed: list[str],
               flow_run_id: str, tally: Tally) -> tuple[dict[str, list[Item]], list[EventRow]]:
    """Knowledge-file items (per file, in order) and `memory_events` rows of one distilled chunk."""
    items: dict[str, list[Item]] = {}
    rows: list[EventRow] = []
    for memory, event in zip(memories, events, strict=True):
        action, downgraded = effective_action(memory.action, memory.target_file, overwrite_allowed)
        reason = event.reason + ("; overwrite of this file not allowed, appended instead" if downgraded else "")
        tally.events[event.event] += 1
        if downgraded:
            tally.warnings["overwrite_downgraded"] += 1
        items.setdefault(memory.target_file, []).append(Item(
            memory_id=event.memory_id, content_hash=memory.content_hash, text=memory.content,
            day=chunk.day.isoformat(), source=memory.source or chunk.source, action=action,  # type: ignore[arg-type]
            merged=event.event != "ADD",
        ))
        rows.append(EventRow(flow_run_id, event.event, event.memory_id, event.content_hash, memory.target_file,
                             memory.importance, list(memory.tags), event.similarity, reason, memory.source))
    return items, rows


def reject_rows(chunk: Chunk, outcome: ChunkOutcome, flow_run_id: str) -> list[EventRow]:
    return [EventRow(flow_run_id, "REJECT", None, r.content_hash, r.target_file, r.importance, r.tags, None,
                     r.reason, chunk.source) for r in outcome.rejections]


def chunk_record(chunk: Chunk, outcome: ChunkOutcome, events: list[MemoryEvent], info: EngineInfo,
                 flow_run_id: str) -> ChunkRecord:
    return ChunkRecord(chunk.input_hash, info.version, info.model, chunk.key, chunk.day, chunk.source,
                       len(chunk.entries), len(outcome.memories), len(outcome.rejections), outcome.repaired,
                       list(dict.fromkeys(e.memory_id for e in events)), flow_run_id)


def quarantine_record(chunk: Chunk, outcome: ChunkOutcome, info: EngineInfo, flow_run_id: str) -> QuarantineRecord:
    return QuarantineRecord(chunk.key, chunk.input_hash, info.version, info.model, outcome.reason or "unusable",
                            outcome.raw_reply, outcome.repair_reply, flow_run_id)

"""Turning chunk outcomes and store events into file items, ledger rows and the run summary (pure).

The summary holds counts and file names only — never memory text — because it is shown in Prefect
artifacts, stored in `pipeline_runs.counts` and printed by the CLI.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from chronicle.distill.chunks import Chunk
from chronicle.distill.engine import REPEATS_ORDER, ChunkOutcome, EngineInfo, order_phrase
from chronicle.distill.gate import KEPT_OUT, KnowledgePolicy, verdict
from chronicle.distill.knowledge import KnowledgeWrite, effective_action
from chronicle.distill.proposals import Proposal, make_proposal
from chronicle.distill.records import ChunkRecord, EventRow, QuarantineRecord
from chronicle.distill.sections import Item
from chronicle.memory.model import Memory, MemoryEvent
from chronicle.memory.subjects import USER

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
    kept_out: Counter[str] = field(default_factory=Counter)
    """Stored memories not written to a knowledge file, by gate verdict (small talk, question, importance)."""
    proposals: int = 0
    proposals_new: int = 0
    """Proposals not seen in an earlier run (the others were found by their deterministic id)."""
    suspected_injection: int = 0
    ledger_reconciled: int = 0
    temp_files_removed: int = 0

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

    def add_file(self, result: KnowledgeWrite) -> None:
        self.files[result.name] = {"changed": result.changed, "added": result.stats.added,
                                   "already_present": result.stats.present,
                                   "sections_overwritten": result.stats.overwritten_sections,
                                   "over_daily_cap": result.stats.capped, "repeated_fact": result.stats.repeated,
                                   "moved_out_for_size": result.stats.moved_out,
                                   "backup": result.backup is not None, "skipped": result.skipped}
        if result.skipped:
            self.warnings["knowledge_file_skipped"] += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries, "chunks": self.chunks, "chunks_cached": self.cached,
            "chunks_distilled": self.distilled, "chunks_quarantined": self.quarantined,
            "chunks_failed": self.failed, "llm_calls": self.llm_calls, "memories": self.memories,
            "events": {k: self.events.get(k, 0) for k in EVENT_KINDS}, "rejected": dict(self.rejected),
            "warnings": dict(self.warnings), "redactions": dict(sorted(self.redactions.items())),
            "files": self.files, "kept_out_of_files": dict(self.kept_out), "proposals": self.proposals,
            "proposals_new": self.proposals_new, "suspected_injection": self.suspected_injection,
            "ledger_reconciled": self.ledger_reconciled,
            "temp_files_removed": self.temp_files_removed,
        }


@dataclass
class ChunkPlan:
    items: dict[str, list[Item]] = field(default_factory=dict)
    """Knowledge-file items per file, in note order."""
    events: list[EventRow] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)


def person_section(memory: Memory) -> str:
    """The person whose USER.md section takes the memory: a named subject ("" = the file's day sections, which
    are about the user already)."""
    return memory.subject if memory.target_file == "USER.md" and memory.subject not in ("", USER) else ""


def plan_chunk(chunk: Chunk, memories: list[Memory], events: list[MemoryEvent], policy: KnowledgePolicy,
               flow_run_id: str, tally: Tally) -> ChunkPlan:
    """Where each stored memory of a distilled chunk goes besides the store (`gate.verdict`): its knowledge
    file, a proposal (protected file), or nowhere — and the `memory_events` row recording it."""
    plan = ChunkPlan()
    for memory, event in zip(memories, events, strict=True):
        tally.events[event.event] += 1
        reason, where = event.reason, verdict(memory, policy)
        if where in KEPT_OUT:
            tally.kept_out[where] += 1
            reason += f"; not written to {memory.target_file}: {where.replace('_', ' ')}"
        elif where in ("order", "proposal"):
            order = where == "order"
            tally.proposals += 1
            tally.suspected_injection += order
            why = (f"suspected injection: {order_phrase(memory) or REPEATS_ORDER}" if order
                   else f"{memory.target_file} is protected: a distillation never changes it")
            plan.proposals.append(make_proposal(memory, day=chunk.day, source=chunk.source, memory_id=event.memory_id,
                                                flow_run_id=flow_run_id, reason=why, suspected_injection=order))
            reason += ("; reads as an order to the assistant: stored flagged, proposed for approval" if order
                       else "; protected file: proposed for approval")
        else:
            action, downgraded = effective_action(memory.action, memory.target_file, list(policy.overwrite_allowed))
            if downgraded:
                tally.warnings["overwrite_downgraded"] += 1
                reason += "; overwrite of this file not allowed, appended instead"
            plan.items.setdefault(memory.target_file, []).append(Item(
                memory_id=event.memory_id, content_hash=memory.content_hash, text=memory.content,
                day=chunk.day.isoformat(), source=memory.source or chunk.source, action=action,  # type: ignore[arg-type]
                merged=event.event != "ADD", importance=memory.importance,
                # USER.md keeps one section per person; a knowledge update moves the facts it replaced to history.
                subject=person_section(memory), supersedes=event.supersedes,
            ))
        plan.events.append(EventRow(flow_run_id, event.event, event.memory_id, event.content_hash,
                                    memory.target_file, memory.importance, list(memory.tags), event.similarity,
                                    reason, memory.source))
    return plan


def injection_proposals(chunk: Chunk, outcome: ChunkOutcome, flow_run_id: str, tally: Tally) -> list[Proposal]:
    """Rejected suspected injections that still carry a memory: flagged proposals (never written, not stored). A
    valid memory that reads as an order is not rejected: it is stored flagged and `plan_chunk` proposes it."""
    out = []
    for r in outcome.rejections:
        if r.reason != "suspected_injection":
            continue
        tally.suspected_injection += 1
        if r.memory is not None:
            out.append(make_proposal(r.memory, day=chunk.day, source=chunk.source, memory_id=None,
                                     reason=f"suspected injection: {r.detail or 'reads as an instruction'}",
                                     suspected_injection=True, flow_run_id=flow_run_id))
    tally.proposals += len(out)
    return out


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

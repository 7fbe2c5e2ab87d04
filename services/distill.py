"""Use cases of memory distillation: the window of notes, one chunk through an engine, the stores.

The flow orders them (store memories, then knowledge files, then the ledger) for crash safety; each
function here is one step with its own short I/O window.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from chronicle.distill.chunks import Chunk, NoteEntry
from chronicle.distill.decide import SCHEMA as DECISIONS_SCHEMA
from chronicle.distill.decide import Shown, apply_decisions, decision_messages
from chronicle.distill.engine import ChunkOutcome, distill_offline, distill_with_llm
from chronicle.distill.gate import DAILY_CAP
from chronicle.distill.knowledge import KnowledgeWrite, clean_workspace, sync_file
from chronicle.distill.proposals import Proposal
from chronicle.distill.records import ChunkRecord, EventRow, QuarantineRecord
from chronicle.distill.sections import Item
from chronicle.llm import LLMUnavailableError
from chronicle.llm.call import LLMCall
from chronicle.memory.model import Memory, MemoryEvent
from chronicle.memory.subjects import user_name
from chronicle.redaction.configured import redactor_for
from chronicle.services.llm_gate import llm_call
from chronicle.settings import Settings
from chronicle.storage import proposals as proposals_sql
from chronicle.storage.db import connect, transactions
from chronicle.storage.memory import events as sql
from chronicle.storage.memory.store import MemoryStore


def resolve_window(settings: Settings, days: int | None, until: date | None,
                   project: str | None = None) -> tuple[date, date]:
    """(after, until): the window is `after < local_date <= until`, `until` defaulting to today locally."""
    days = settings.memory.distill_days if days is None else days
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    until = until or datetime.now(settings.tz_for(project or settings.ingest.notes_project)).date()
    return until - timedelta(days=days), until


def load_window(settings: Settings, after: date, until: date, project: str | None = None) -> list[NoteEntry]:
    """Daily-note entries with `after < local_date <= until` (of `project`, if given), in note order."""
    with connect(settings) as conn:
        return sql.load_note_entries(conn, after, until, project)


def clean_knowledge_workspace(settings: Settings) -> list[str]:
    """Temp files a killed knowledge-file write left behind, removed (their names)."""
    return clean_workspace(settings.workspace_dir)


def cached_chunks(settings: Settings, hashes: list[str], prompt_version: str, model: str) -> set[str]:
    """Which chunk hashes were already distilled with this prompt version and model."""
    with connect(settings) as conn:
        return sql.distilled_hashes(conn, hashes, prompt_version, model)


def distill_chunk(settings: Settings, chunk: Chunk, run_id: str) -> ChunkOutcome:
    """One chunk through the offline rules, or through the LLM gate (shared `llm` slots, logged calls) and then
    the model's add / update / no-op decisions (`memory_llm_decisions`)."""
    redactor = redactor_for(settings)
    if settings.llm.offline:
        return distill_offline(chunk, redactor, user_name_of(settings))
    call = llm_call(settings, run_id, project_id=chunk.project_id, redact_answer=False)
    outcome = distill_with_llm(chunk, call, redactor)
    if outcome.status == "ok" and settings.memory.llm_decisions:
        _decide(settings, outcome, call)
    return outcome


DECIDE_NEIGHBOURS = 3
"""Stored memories shown beside each new one: the closest of the same person, current ones only."""


def _decide(settings: Settings, outcome: ChunkOutcome, call: LLMCall) -> None:
    """The model's decisions on the outcome's memories about a person that has stored memories close to them
    (`chronicle.distill.decide`); no such memory, no call. A call that fails leaves the memories to the rules
    (a warning, not a failed chunk: the memories themselves are good). A memory that reads as an order to the
    assistant is never shown: text that gives orders must not get to retire a stored fact."""
    asked = [bool(m.subject) and not m.reads_as_order for m in outcome.memories]
    if not any(asked):
        return
    store = MemoryStore(settings)
    shown = [[] if not ask else [
        Shown(h.id, h.content, h.created.date().isoformat())
        for h in store.search(m.content, subject=m.subject, limit=2 * DECIDE_NEIGHBOURS) if not h.superseded_by
    ][:DECIDE_NEIGHBOURS] for m, ask in zip(outcome.memories, asked, strict=True)]
    if not any(shown):
        return
    outcome.llm_calls += 1
    try:
        reply = call(decision_messages(outcome.memories, shown), "decide", json_schema=DECISIONS_SCHEMA)
    except LLMUnavailableError:
        outcome.warnings["decisions_unavailable"] += 1
        return
    decided = apply_decisions(reply, outcome.memories, shown)
    outcome.memories = decided.memories
    if decided.invalid:
        outcome.warnings["decision_invalid"] += decided.invalid


def user_name_of(settings: Settings) -> str | None:
    """The user's name as the workspace's USER.md states it (`名字：王芳`, `- Name: Alice`), or None."""
    path = settings.workspace_dir / "USER.md"
    try:
        return user_name(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else None
    except OSError:
        return None


def store_batches(settings: Settings, batches: list[tuple[list[Memory], datetime]], run_id: str
                  ) -> list[list[MemoryEvent]]:
    """Upsert several chunks' memories into LanceDB (dedup on write): one embedding call, one commit per chunk."""
    return MemoryStore(settings).upsert_many(batches, flow_run_id=run_id)


def memory_count(settings: Settings) -> int:
    return MemoryStore(settings).count()


def write_knowledge(settings: Settings, name: str, items: list[Item]) -> KnowledgeWrite:
    """Place items in one knowledge file (backup + atomic replace, only when it changes), at most
    `DAILY_CAP` per note day and `knowledge_max_chars` in all (the least important bullets leave, by
    their memories' importance in the store); a file that is not UTF-8 is left alone (`FileResult.skipped`)."""

    def importance(ids: set[str]) -> dict[str, float]:
        return {m.id: m.importance for m in MemoryStore(settings).get(sorted(ids))}

    return sync_file(settings.workspace_dir, name, items, keep=settings.memory.backup_keep, cap=DAILY_CAP,
                     budget=settings.memory.knowledge_max_chars, importance=importance,
                     redactor=redactor_for(settings))


def record_run(settings: Settings, chunks: list[ChunkRecord], quarantine: list[QuarantineRecord],
               events: list[EventRow], proposals: list[Proposal]) -> int:
    """One transaction: the chunk cache only says "done" together with the events and proposals it produced.
    Returns how many proposals were new."""
    new = 0
    for attempt in transactions(settings):  # a lake commit conflict re-runs the unit
        with attempt as conn:
            sql.record_events(conn, events)
            sql.record_quarantine(conn, quarantine)
            new = proposals_sql.record_proposals(conn, proposals)
            sql.record_chunks(conn, chunks)
    return new

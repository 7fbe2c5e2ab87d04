"""Distillation tasks: thin Prefect wrappers over `chronicle.distill` and the stores.

No Prefect `retries` anywhere here: `ChatClient` is the one retry layer for LLM calls, and the rest is
local I/O whose failures a retry would only repeat.
"""

from __future__ import annotations

from datetime import date, datetime

from prefect import task
from prefect.cache_policies import NO_CACHE

from chronicle.distill.chunks import Chunk, NoteEntry
from chronicle.distill.engine import ChunkOutcome, RedactingLogger, distill_offline, distill_with_llm
from chronicle.distill.knowledge import FileResult, sync_file
from chronicle.distill.records import ChunkRecord, EventRow, QuarantineRecord
from chronicle.distill.redact import Redactor
from chronicle.distill.sections import Item
from chronicle.llm import ChatClient
from chronicle.memory.model import Memory
from chronicle.settings import get_settings
from storage import memory_events as sql
from storage.db import connect, transaction
from storage.llm_log import DuckDBCallLogger
from storage.memory_schema import MemoryEvent
from storage.memory_store import MemoryStore


@task(name="load-notes-window", cache_policy=NO_CACHE)
def load_window(after: date, until: date) -> list[NoteEntry]:
    with connect(get_settings()) as conn:
        return sql.load_note_entries(conn, after, until)


@task(name="cached-chunks", cache_policy=NO_CACHE)
def cached_chunks(hashes: list[str], prompt_version: str, model: str) -> set[str]:
    with connect(get_settings()) as conn:
        return sql.distilled_hashes(conn, hashes, prompt_version, model)


@task(name="distill-chunk", task_run_name="distill {chunk.key}", cache_policy=NO_CACHE)
def distill_chunk(chunk: Chunk, flow_run_id: str) -> ChunkOutcome:
    settings = get_settings()
    redactor = Redactor.build(settings.redact_extra_patterns)
    if settings.offline_llm:
        return distill_offline(chunk, redactor)
    logger = RedactingLogger(DuckDBCallLogger(settings, flow_run_id), redactor)
    return distill_with_llm(chunk, ChatClient(settings, logger=logger), redactor)


@task(name="store-memories", task_run_name="store {label}", cache_policy=NO_CACHE)
def store_memories(memories: list[Memory], created: datetime, flow_run_id: str, label: str = "") -> list[MemoryEvent]:
    return MemoryStore(get_settings()).upsert(memories, created=created, flow_run_id=flow_run_id)


@task(name="memory-count", cache_policy=NO_CACHE)
def memory_count() -> int:
    return MemoryStore(get_settings()).count()


@task(name="write-knowledge", task_run_name="write {name}", cache_policy=NO_CACHE)
def write_knowledge(name: str, items: list[Item]) -> FileResult:
    settings = get_settings()
    return sync_file(settings.workspace_dir, name, items, keep=settings.backup_keep)


@task(name="record-distill", cache_policy=NO_CACHE)
def record_run(chunks: list[ChunkRecord], quarantine: list[QuarantineRecord], events: list[EventRow]) -> None:
    """One transaction: the chunk cache only says "done" together with the events it produced."""
    with transaction(get_settings()) as conn:
        sql.record_events(conn, events)
        sql.record_quarantine(conn, quarantine)
        sql.record_chunks(conn, chunks)

"""Distillation tasks: thin Prefect wrappers over `chronicle.services.distill`.

No Prefect `retries` anywhere here: `ChatClient` is the one retry layer for LLM calls, and the rest is
local I/O whose failures a retry would only repeat.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture
from prefect.states import Failed

from chronicle.distill.chunks import Chunk, NoteEntry
from chronicle.distill.engine import ChunkFailedError, ChunkOutcome
from chronicle.distill.knowledge import KnowledgeWrite
from chronicle.distill.proposals import Proposal
from chronicle.distill.records import ChunkRecord, EventRow, QuarantineRecord
from chronicle.distill.sections import Item
from chronicle.memory.model import Memory, MemoryEvent
from chronicle.services import distill as uc
from chronicle.services import forget, ledger, proposals
from chronicle.settings import Settings


@task(name="load-notes-window", cache_policy=NO_CACHE)
def load_window(settings: Settings, after: date, until: date, project: str | None = None) -> list[NoteEntry]:
    return uc.load_window(settings, after, until, project)


@task(name="clean-workspace", cache_policy=NO_CACHE)
def clean_knowledge_workspace(settings: Settings) -> list[str]:
    return uc.clean_knowledge_workspace(settings)


@task(name="cached-chunks", cache_policy=NO_CACHE)
def cached_chunks(settings: Settings, hashes: list[str], prompt_version: str, model: str) -> set[str]:
    return uc.cached_chunks(settings, hashes, prompt_version, model)


@task(name="distill-chunk", task_run_name="distill {chunk.key}", cache_policy=NO_CACHE)
def distill_chunk(settings: Settings, chunk: Chunk, flow_run_id: str) -> Any:
    """The chunk's outcome; a chunk that failed (LLM unavailable) ends its task run Failed, so the UI does not show
    it green, carrying its outcome in a `ChunkFailedError` (`chunk_outcome` reads it back). A returned state, not a
    raise: an expected failure gets no traceback in the run's logs."""
    outcome = uc.distill_chunk(settings, chunk, flow_run_id)
    if outcome.status != "failed":
        return outcome
    error = ChunkFailedError(outcome)
    return Failed(message=str(error)[:1000], data=error)


def chunk_outcome(future: PrefectFuture[Any]) -> ChunkOutcome:
    """The outcome of a `distill_chunk` task run, a failed chunk's included."""
    try:
        return future.result()
    except ChunkFailedError as exc:
        return exc.outcome


@task(name="drop-forgotten", cache_policy=NO_CACHE)
def drop_forgotten(settings: Settings, outcomes: list[ChunkOutcome]) -> list[ChunkOutcome]:
    return forget.drop_forgotten(settings, outcomes)


@task(name="store-memories-batch", task_run_name="store {label}", cache_policy=NO_CACHE)
def store_batches(settings: Settings, batches: list[tuple[list[Memory], datetime]], flow_run_id: str,
                  label: str = "all chunks") -> list[list[MemoryEvent]]:
    return uc.store_batches(settings, batches, flow_run_id)


@task(name="reconcile-events", task_run_name="reconcile {label}", cache_policy=NO_CACHE)
def reconcile_events(settings: Settings, events: list[MemoryEvent], seen: set[str],
                     label: str = "", flow_run_id: str | None = None) -> list[MemoryEvent]:
    return ledger.reconcile_events(settings, events, seen, flow_run_id)


@task(name="reconcile-ledger", cache_policy=NO_CACHE)
def reconcile_orphans(settings: Settings, flow_run_id: str) -> int:
    return ledger.reconcile_orphans(settings, flow_run_id)


@task(name="proposals-overview", cache_policy=NO_CACHE)
def proposals_overview(settings: Settings, ids: list[str], flow_run_id: str) -> str:
    return proposals.run_overview(settings, ids, flow_run_id)


@task(name="memory-count", cache_policy=NO_CACHE)
def memory_count(settings: Settings) -> int:
    return uc.memory_count(settings)


@task(name="write-knowledge", task_run_name="write {name}", cache_policy=NO_CACHE)
def write_knowledge(settings: Settings, name: str, items: list[Item]) -> KnowledgeWrite:
    return uc.write_knowledge(settings, name, items)


@task(name="record-distill", cache_policy=NO_CACHE)
def record_run(settings: Settings, chunks: list[ChunkRecord], quarantine: list[QuarantineRecord],
               events: list[EventRow], proposed: list[Proposal]) -> int:
    return uc.record_run(settings, chunks, quarantine, events, proposed)

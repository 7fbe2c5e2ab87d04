"""Flow `distill_memory`: daily notes of a window -> redacted chunks -> memories -> LanceDB + knowledge files.

Order matters for crash safety: memories are upserted (idempotent), then the knowledge files are written
(idempotent: bullets carry their content hash), and only then are chunks recorded as done, together with their
events and proposals. A run that dies anywhere redoes at most the unrecorded chunks, and redoing them changes
nothing twice; what the dead run stored without recording is put back into the ledger (`chronicle.services.ledger`).

Every memory is stored and searchable; only those passing the knowledge gate reach a file (`gate.py`), and
nothing reaches a protected file (SOUL.md, IDENTITY.md, AGENTS.md) or carries an instruction to the model into any
file: those become proposals for `chronicle memory approve|reject` (the latter stored flagged `reads_as_order`).
"""

from __future__ import annotations

from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run
from prefect.states import Completed

from chronicle.distill.chunks import Chunk, make_chunks, redact_entries
from chronicle.distill.engine import ChunkOutcome, EngineInfo, engine_info
from chronicle.distill.gate import KnowledgePolicy
from chronicle.distill.proposals import Proposal
from chronicle.distill.records import ChunkRecord, EventRow, QuarantineRecord
from chronicle.distill.sections import Item
from chronicle.distill.summary import DistillSummary, summary_markdown
from chronicle.distill.tally import (
    Tally,
    chunk_record,
    injection_proposals,
    plan_chunk,
    quarantine_record,
    reject_rows,
)
from chronicle.param_checks import name_part
from chronicle.params import DistillDays, NotesProject, UntilDate
from chronicle.progress import report
from chronicle.redaction.configured import redactor_for
from chronicle.services.distill import resolve_window
from chronicle.services.llm_gate import reserve_llm
from chronicle.services.param_checks import distill_window
from chronicle.services.run_tracking import (
    REFUSALS,
    RUN_HOOKS,
    current_flow_run_id,
    refused,
    run_notes,
    tracked_run,
)
from chronicle.settings import Settings, load_settings
from chronicle.tasks import distill as t


class DistillIncomplete(RuntimeError):
    """Some chunks could not be distilled (LLM unavailable); the rest were kept, a rerun retries these."""


def _distill(settings: Settings, chunks: list[Chunk], run_id: str) -> list[ChunkOutcome]:
    """Chunks in parallel, at most `llm_concurrency` in flight, under slots of the shared `llm` limit.

    One reservation for the whole fan-out (as the weekly flows do): the chunk tasks run in this
    process's threads and take their calls' slots from it. The offline engine takes none.
    """
    width = max(1, settings.llm.concurrency)
    gate = nullcontext() if settings.llm.offline or not chunks else reserve_llm(settings, min(width, len(chunks)))
    outcomes: list[ChunkOutcome] = []
    with gate:
        for start in range(0, len(chunks), width):
            futures = [t.distill_chunk.submit(settings, c, run_id) for c in chunks[start : start + width]]
            outcomes += [t.chunk_outcome(f) for f in futures]
            report("distill", len(outcomes), len(chunks))
    return outcomes


def _run_name() -> str:
    """`distill-2026-04-26` (`-PROJECT` when one is given); never raises, whatever the parameters."""
    params = flow_run.parameters
    project = name_part(params.get("project"), "")
    return f"distill-{name_part(params.get('until'), 'today')}" + (f"-{project}" if project else "")


@flow(name="distill-memory", flow_run_name=_run_name, log_prints=False, **RUN_HOOKS)
def distill_memory(days: DistillDays = 0, until: UntilDate = "", project: NotesProject = "") -> DistillSummary:
    """Distill the daily notes of `(until - days, until]` into memories (seed 002), idempotently.

    Args:
        days: Days of daily notes to read (1 to 366), ending at `until`; 0 = the DISTILL_DAYS setting (7).
        until: Last local day of the window (inclusive), YYYY-MM-DD, e.g. 2026-04-26; empty = today in the
            project's timezone.
        project: Only the notes of this project (raw_logs.project_id); empty = the notes of every project.
    """
    settings = load_settings()
    logger = get_run_logger()
    policy = KnowledgePolicy.from_settings(settings)
    try:
        days_, until_, project_ = distill_window(settings, days, until, project)
        with tracked_run(settings, "distill-memory", {"days": days, "until": until, "project": project}) as counts:
            after, until = resolve_window(settings, days_, until_, project_)
            project = project_
            info = engine_info(settings)
            run_id = current_flow_run_id()
            tally = Tally()
            todo = _chunks_to_distill(settings, logger, tally, info, after, until, project)
            outcomes = _distill(settings, todo, run_id)
            outcomes = t.drop_forgotten(settings, outcomes)  # `chronicle memory forget|edit`: never back
            rows = _store_and_plan(settings, logger, tally, info, policy, todo, outcomes, run_id)
            _log_gate(logger, tally)
            for name, items in sorted(rows.files.items()):
                result = t.write_knowledge(settings, name, items)
                tally.add_file(result)
                if result.skipped:
                    logger.warning("%s", result.skipped)
            proposed = _unique(rows.proposed)
            tally.proposals_new = t.record_run(settings, rows.records, rows.quarantine, rows.events, proposed)
            tally.ledger_reconciled += t.reconcile_orphans(settings, run_id)

            summary = DistillSummary(after, until, info.name, info.model, info.version, tally, t.memory_count(settings),
                                     project)
            counts.update(summary.as_dict())
            counts.message = summary.message()
            _publish_artifacts(settings, summary, proposed, run_id)
            logger.info("distilled %d chunks: %s; files changed: %s; redacted: %s", tally.distilled,
                        dict(tally.events), sorted(n for n, f in tally.files.items() if f["changed"]),
                        dict(tally.redactions))
            if tally.failed:
                raise DistillIncomplete(f"{tally.failed} of {len(todo)} chunks failed (LLM unavailable); "
                                        "the others were kept, rerun to retry the failed ones")
    except REFUSALS as exc:  # a typo, or the database held by another process: one line, no traceback
        return refused(exc)  # its `on_failure` hook records the refused run in pipeline_runs
    except DistillIncomplete as exc:  # expected: one line saying how many chunks failed, no traceback
        return refused(exc, said="partly failed")
    return Completed(message=counts.message, data=summary)  # a snapshot not written is named in the message


def _chunks_to_distill(settings: Settings, logger: Any, tally: Tally, info: EngineInfo, after: date, until: date,
                       project: str) -> list[Chunk]:
    """The window's notes, redacted, in chunks, less those this engine version distilled already; a killed
    knowledge-file write's temp files removed first."""
    removed = t.clean_knowledge_workspace(settings)
    tally.temp_files_removed = len(removed)
    if removed:
        logger.warning("removed %d temp file(s) a killed knowledge-file write left behind: %s", len(removed),
                       ", ".join(sorted(removed))[:300])
    entries = redact_entries(t.load_window(settings, after, until, project), redactor_for(settings),
                             tally.redactions)
    chunks = make_chunks(entries)
    done = t.cached_chunks(settings, [c.input_hash for c in chunks], info.version, info.model)
    todo = [c for c in chunks if c.input_hash not in done]
    tally.entries, tally.chunks, tally.cached = len(entries), len(chunks), len(chunks) - len(todo)
    logger.info("%d note entries in %s..%s -> %d chunks, %d already distilled (%s)", len(entries), after, until,
                len(chunks), tally.cached, info.model)
    return todo


@dataclass
class _RunRows:
    """What the run's chunks add: knowledge-file items per file, and the rows recorded with the chunks at the end."""

    files: dict[str, list[Item]] = field(default_factory=dict)
    records: list[ChunkRecord] = field(default_factory=list)
    quarantine: list[QuarantineRecord] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    proposed: list[Proposal] = field(default_factory=list)


def _store_and_plan(settings: Settings, logger: Any, tally: Tally, info: EngineInfo, policy: KnowledgePolicy,
                    todo: list[Chunk], outcomes: list[ChunkOutcome], run_id: str) -> _RunRows:
    """Store the distilled memories, then plan each chunk's file items, events, proposals and records."""
    rows = _RunRows()
    seen: set[str] = set()  # content hashes this run's events account for (ledger reconciliation)
    # One store call for every chunk: their memories are embedded in one batch (3x faster than per chunk);
    # the store still plans and commits them chunk by chunk, in order.
    storing = [(c, o) for c, o in zip(todo, outcomes, strict=True) if o.status == "ok" and o.memories]
    stored_by_chunk = dict(zip([c.key for c, _ in storing], t.store_batches(
        settings, [(o.memories, datetime.combine(c.day, time.min, tzinfo=settings.tz_for(c.project_id)))
                   for c, o in storing], run_id), strict=True))
    for chunk, outcome in zip(todo, outcomes, strict=True):
        tally.add_outcome(outcome)
        _log_outcome(logger, chunk, outcome)
        if outcome.status == "quarantined":
            rows.quarantine.append(quarantine_record(chunk, outcome, info, run_id))
        if outcome.status != "ok":
            continue
        stored = stored_by_chunk.get(chunk.key, [])
        reconciled = t.reconcile_events(settings, stored, seen, chunk.key, run_id) if stored else []
        tally.ledger_reconciled += sum(a.event != b.event for a, b in zip(stored, reconciled, strict=True))
        plan = plan_chunk(chunk, outcome.memories, reconciled, policy, run_id, tally)
        for name, new in plan.items.items():
            rows.files.setdefault(name, []).extend(new)
        rows.proposed += plan.proposals + injection_proposals(chunk, outcome, run_id, tally)
        rows.events += plan.events + reject_rows(chunk, outcome, run_id)
        rows.records.append(chunk_record(chunk, outcome, reconciled, info, run_id))
    return rows


def _publish_artifacts(settings: Settings, summary: DistillSummary, proposed: list[Proposal], run_id: str) -> None:
    """The run's summary (counts only, with the run's notes) and the proposals waiting for approval."""
    notes = "".join(f"- {note}\n" for note in run_notes())
    markdown = summary_markdown(summary.as_dict()) + (f"\n## Notes\n\n{notes}" if notes else "")
    create_markdown_artifact(markdown=markdown, key="distill-summary",
                             description="What the last memory distillation did (counts only)")
    create_markdown_artifact(markdown=t.proposals_overview(settings, [p.proposal_id for p in proposed], run_id),
                             key="distill-proposals",
                             description="Memories waiting for approval (protected files, suspected injection)")


def _unique(proposals: list[Proposal]) -> list[Proposal]:
    """One proposal per id (the same text from two chunks is one decision), first occurrence kept."""
    first: dict[str, Proposal] = {}
    for p in proposals:
        first.setdefault(p.proposal_id, p)
    return list(first.values())


def _log_gate(logger: Any, tally: Tally) -> None:
    if tally.warnings["overwrite_downgraded"]:
        logger.warning("%d overwrite(s) of files not in overwrite_allowed_files were appended instead",
                       tally.warnings["overwrite_downgraded"])
    if tally.suspected_injection:
        logger.warning("%d memory(ies) read as instructions to the model (suspected injection): stored flagged, kept "
                       "out of every knowledge file; see `chronicle memory proposals`", tally.suspected_injection)
    if tally.proposals:
        logger.info("%d proposal(s) wait for approval (`chronicle memory proposals`)", tally.proposals)
    if tally.ledger_reconciled:
        logger.warning("%d memory event(s) of an interrupted run restored in memory_events", tally.ledger_reconciled)


def _log_outcome(logger: Any, chunk: Chunk, outcome: ChunkOutcome) -> None:
    """Warnings name the chunk and the kind of problem, never the memory text."""
    for r in outcome.rejections:
        logger.warning("chunk %s: rejected a memory (%s; targetFile=%r)", chunk.key, r.reason,
                       (r.target_file or "")[:80])
    for kind, n in sorted(Counter(outcome.warnings).items()):
        logger.warning("chunk %s: %d x %s%s", chunk.key, n, kind,
                       " (clamped to [0, 1])" if kind == "importance_clamped" else "")
    if outcome.repaired:
        logger.warning("chunk %s: reply was not valid JSON; the repair attempt fixed it", chunk.key)
    if outcome.status == "quarantined":
        logger.warning("chunk %s: quarantined after one repair attempt (%s)", chunk.key, outcome.reason)
    elif outcome.status == "failed":
        logger.error("chunk %s: not distilled: %s", chunk.key, outcome.reason)

"""Flow `distill_memory`: daily notes of a window -> redacted chunks -> memories -> LanceDB + knowledge files.

Order matters for crash safety: memories are upserted (idempotent), then the knowledge files are written
(idempotent: bullets carry their content hash), and only then are chunks recorded as done. A run that dies
anywhere redoes at most the unrecorded chunks, and redoing them changes nothing twice.
"""

from __future__ import annotations

from collections import Counter
from contextlib import nullcontext
from datetime import datetime, time
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run

from chronicle.distill.chunks import Chunk, make_chunks, redact_entries
from chronicle.distill.engine import ChunkOutcome, engine_info
from chronicle.distill.sections import Item
from chronicle.distill.summary import DistillSummary, summary_markdown
from chronicle.distill.tally import Tally, chunk_record, plan_chunk, quarantine_record, reject_rows
from chronicle.params import DistillDays, UntilDate
from chronicle.progress import report
from chronicle.settings import Settings, load_settings
from services.distill import resolve_window
from services.llm_gate import redactor_for, reserve_llm
from services.runs import current_flow_run_id, tracked_run
from storage.snapshot import publish_snapshot
from tasks import distill as t


class DistillIncomplete(RuntimeError):
    """Some chunks could not be distilled (LLM unavailable); the rest were kept, a rerun retries these."""


def _distill(settings: Settings, chunks: list[Chunk], run_id: str) -> list[ChunkOutcome]:
    """Chunks in parallel, at most `llm_concurrency` in flight, under slots of the shared `llm` limit.

    One reservation for the whole fan-out (as the weekly flows do): the chunk tasks run in this
    process's threads and take their calls' slots from it. The offline engine takes none.
    """
    width = max(1, settings.llm_concurrency)
    gate = nullcontext() if settings.offline_llm or not chunks else reserve_llm(settings, min(width, len(chunks)))
    outcomes: list[ChunkOutcome] = []
    with gate:
        for start in range(0, len(chunks), width):
            futures = [t.distill_chunk.submit(settings, c, run_id) for c in chunks[start : start + width]]
            outcomes += [f.result() for f in futures]
            report("distill", len(outcomes), len(chunks))
    return outcomes


def _run_name() -> str:
    return f"distill-{flow_run.parameters.get('until') or 'today'}"


@flow(name="distill-memory", flow_run_name=_run_name, log_prints=False)
def distill_memory(days: DistillDays = None, until: UntilDate = None) -> DistillSummary:
    """Distill the daily notes of `(until - days, until]` into memories (seed 002), idempotently."""
    settings = load_settings()
    logger = get_run_logger()
    after, until = resolve_window(settings, days, until)
    info = engine_info(settings)
    with tracked_run(settings, "distill-memory", {"days": (until - after).days, "until": until}) as counts:
        run_id = current_flow_run_id()
        tally = Tally()
        entries = redact_entries(t.load_window(settings, after, until), redactor_for(settings), tally.redactions)
        chunks = make_chunks(entries, settings.distill_chunk_chars)
        done = t.cached_chunks(settings, [c.input_hash for c in chunks], info.version, info.model)
        todo = [c for c in chunks if c.input_hash not in done]
        tally.entries, tally.chunks, tally.cached = len(entries), len(chunks), len(chunks) - len(todo)
        logger.info("%d note entries in %s..%s -> %d chunks, %d already distilled (%s)", len(entries), after, until,
                    len(chunks), tally.cached, info.model)

        files: dict[str, list[Item]] = {}
        records, quarantine, events = [], [], []
        for chunk, outcome in zip(todo, _distill(settings, todo, run_id), strict=True):
            tally.add_outcome(outcome)
            _log_outcome(logger, chunk, outcome)
            if outcome.status == "quarantined":
                quarantine.append(quarantine_record(chunk, outcome, info, run_id))
            if outcome.status != "ok":
                continue
            created = datetime.combine(chunk.day, time.min, tzinfo=settings.tz_for(chunk.project_id))
            stored = (t.store_memories(settings, outcome.memories, created, run_id, chunk.key)
                      if outcome.memories else [])
            items, rows = plan_chunk(chunk, outcome.memories, stored, settings.overwrite_allowed_files, run_id, tally)
            for name, new in items.items():
                files.setdefault(name, []).extend(new)
            events += rows + reject_rows(chunk, outcome, run_id)
            records.append(chunk_record(chunk, outcome, stored, info, run_id))
        if tally.warnings["overwrite_downgraded"]:
            logger.warning("%d overwrite(s) of files not in overwrite_allowed_files were appended instead",
                           tally.warnings["overwrite_downgraded"])
        for name, items in sorted(files.items()):
            tally.add_file(t.write_knowledge(settings, name, items))
        t.record_run(settings, records, quarantine, events)

        summary = DistillSummary(after, until, info.name, info.model, info.version, tally, t.memory_count(settings))
        counts.update(summary.as_dict())
        create_markdown_artifact(markdown=summary_markdown(summary.as_dict()), key="distill-summary",
                                 description="What the last memory distillation did (counts only)")
        logger.info("distilled %d chunks: %s; files changed: %s; redacted: %s", tally.distilled,
                    dict(tally.events), sorted(n for n, f in tally.files.items() if f["changed"]),
                    dict(tally.redactions))
        if tally.failed:
            raise DistillIncomplete(f"{tally.failed} of {len(todo)} chunks failed (LLM unavailable); "
                                    "the others were kept, rerun to retry the failed ones")
    publish_snapshot(settings)  # analysts query the snapshot, never the file flows write
    return summary


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

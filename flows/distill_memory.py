"""Flow `distill_memory`: daily notes of a window -> redacted chunks -> memories -> LanceDB + knowledge files.

Order matters for crash safety: memories are upserted (idempotent), then the knowledge files are written
(idempotent: bullets carry their content hash), and only then are chunks recorded as done. A run that dies
anywhere redoes at most the unrecorded chunks, and redoing them changes nothing twice.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, time, timedelta
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run

from chronicle.distill.chunks import Chunk, make_chunks, redact_entries
from chronicle.distill.engine import ChunkOutcome, engine_info
from chronicle.distill.redact import Redactor
from chronicle.distill.sections import Item
from chronicle.distill.summary import summary_markdown
from chronicle.distill.tally import Tally, chunk_record, plan_chunk, quarantine_record, reject_rows
from chronicle.params import DistillDays, UntilDate
from chronicle.progress import report
from chronicle.settings import Settings, get_settings
from services.runs import current_flow_run_id, tracked_run
from storage.snapshot import publish_snapshot
from tasks import distill as t


class DistillIncomplete(RuntimeError):
    """Some chunks could not be distilled (LLM unavailable); the rest were kept, a rerun retries these."""


def resolve_window(settings: Settings, days: int | None, until: date | None) -> tuple[date, date]:
    """(after, until): the window is `after < local_date <= until`, `until` defaulting to today locally."""
    days = settings.distill_days if days is None else days
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    until = until or datetime.now(settings.tz_for(settings.notes_project)).date()
    return until - timedelta(days=days), until


def _distill(chunks: list[Chunk], run_id: str, width: int) -> list[ChunkOutcome]:
    """Chunks in parallel, at most `width` LLM calls in flight (`llm_concurrency`)."""
    outcomes: list[ChunkOutcome] = []
    for start in range(0, len(chunks), max(1, width)):
        futures = [t.distill_chunk.submit(c, run_id) for c in chunks[start : start + max(1, width)]]
        outcomes += [f.result() for f in futures]
        report("distill", len(outcomes), len(chunks))
    return outcomes


def _run_name() -> str:
    return f"distill-{flow_run.parameters.get('until') or 'today'}"


@flow(name="distill-memory", flow_run_name=_run_name, log_prints=False)
def distill_memory(days: DistillDays = None, until: UntilDate = None) -> dict[str, Any]:
    """Distill the daily notes of `(until - days, until]` into memories (seed 002), idempotently."""
    settings = get_settings()
    logger = get_run_logger()
    after, until = resolve_window(settings, days, until)
    info = engine_info(settings)
    with tracked_run(settings, "distill-memory", {"days": (until - after).days, "until": until}) as counts:
        run_id = current_flow_run_id()
        tally = Tally()
        entries = redact_entries(t.load_window(after, until), Redactor.build(settings.redact_extra_patterns),
                                 tally.redactions)
        chunks = make_chunks(entries, settings.distill_chunk_chars)
        done = t.cached_chunks([c.input_hash for c in chunks], info.version, info.model)
        todo = [c for c in chunks if c.input_hash not in done]
        tally.entries, tally.chunks, tally.cached = len(entries), len(chunks), len(chunks) - len(todo)
        logger.info("%d note entries in %s..%s -> %d chunks, %d already distilled (%s)", len(entries), after, until,
                    len(chunks), tally.cached, info.model)

        files: dict[str, list[Item]] = {}
        records, quarantine, events = [], [], []
        for chunk, outcome in zip(todo, _distill(todo, run_id, settings.llm_concurrency), strict=True):
            tally.add_outcome(outcome)
            _log_outcome(logger, chunk, outcome)
            if outcome.status == "quarantined":
                quarantine.append(quarantine_record(chunk, outcome, info, run_id))
            if outcome.status != "ok":
                continue
            created = datetime.combine(chunk.day, time.min, tzinfo=settings.tz_for(chunk.project_id))
            stored = t.store_memories(outcome.memories, created, run_id, chunk.key) if outcome.memories else []
            items, rows = plan_chunk(chunk, outcome.memories, stored, settings.overwrite_allowed_files, run_id, tally)
            for name, new in items.items():
                files.setdefault(name, []).extend(new)
            events += rows + reject_rows(chunk, outcome, run_id)
            records.append(chunk_record(chunk, outcome, stored, info, run_id))
        if tally.warnings["overwrite_downgraded"]:
            logger.warning("%d overwrite(s) of files not in overwrite_allowed_files were appended instead",
                           tally.warnings["overwrite_downgraded"])
        for name, items in sorted(files.items()):
            tally.add_file(t.write_knowledge(name, items))
        t.record_run(records, quarantine, events)

        summary = {"window": {"after": after.isoformat(), "until": until.isoformat()}, "engine": info.name,
                   "model": info.model, "prompt_version": info.version, **tally.as_dict(),
                   "store_rows": t.memory_count()}
        counts.update(summary)
        create_markdown_artifact(markdown=summary_markdown(summary), key="distill-summary",
                                 description="What the last memory distillation did (counts only)")
        logger.info("distilled %d chunks: %s; files changed: %s; redacted: %s", tally.distilled,
                    summary["events"], sorted(n for n, f in tally.files.items() if f["changed"]),
                    summary["redactions"])
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

"""Flow `ingest_logs`: read log files and folders into DuckDB, incrementally and idempotently."""

from __future__ import annotations

from typing import Any

from chronicle.services.param_checks import ingest_paths
from chronicle.services.run_tracking import RUN_HOOKS, refused, run_notes, tracked_run
from chronicle.storage.snapshot import publish_snapshot
from chronicle.tasks.ingest import discover_files, file_size, ingest_batch, shown_path
from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run
from prefect.states import Completed

from chronicle.ingest.batches import file_batches
from chronicle.ingest.model import IngestSummary
from chronicle.param_checks import ParameterError, name_part
from chronicle.params import OptionalProjectId, ReRead, SourcePaths
from chronicle.progress import report
from chronicle.settings import load_settings


def _summary_markdown(summary: IngestSummary, notes: list[str]) -> str:
    rows = "\n".join(f"| {reason} | {n} |" for reason, n in sorted(summary.rejects.items())) or "| — | 0 |"
    waits = "".join(f"- {note}\n" for note in notes)
    return (
        f"# Ingest\n\nfiles: {summary.files} ({summary.by_status}), "
        f"entries added: {summary.entries_added}, removed: {summary.entries_removed}, "
        f"skipped non-log files: {summary.skipped_files}\n\n| reject reason | count |\n|---|---|\n{rows}\n"
        + "".join(f"\nskipped, one JSON document and not log lines: `{d}`\n" for d in summary.skipped_documents)
        + (f"\n## Notes\n\n{waits}" if waits else "")
    )


def _run_name() -> str:
    """`ingest-all-logs`; never raises, whatever the parameters."""
    params = flow_run.parameters
    paths = params.get("paths") or []
    if not isinstance(paths, list | tuple):
        paths = [paths]
    extra = tuple(load_settings().redact_extra_patterns)
    what = name_part(shown_path(str(paths[0]), extra).rsplit("/", 1)[-1], "none") if len(paths) == 1 \
        else f"{len(paths)}-paths"
    return f"ingest-{name_part(params.get('project'), 'all')}-{what}"


@flow(name="ingest-logs", flow_run_name=_run_name, log_prints=False, **RUN_HOOKS)
def ingest_logs(paths: SourcePaths, project: OptionalProjectId = "", force: ReRead = False) -> IngestSummary:
    """Ingest daily notes, JSONL/NDJSON, CSV and LoCoMo files found under `paths` (recursive).

    An unchanged file (same size, mtime and content fingerprint) is skipped, an appended one adds only its
    new lines, a rewritten one is replaced; bad lines land in `rejects` with a reason and the good lines of
    the same file still load. `force` re-reads every file whole (same rows when nothing changed).
    """
    settings = load_settings()
    logger = get_run_logger()
    try:
        params: dict[str, Any] = {"paths": paths, "project": project} | ({"force": True} if force else {})
        with tracked_run(settings, "ingest-logs", params) as counts:
            files, skipped = discover_files(ingest_paths(settings, paths))
            extra = tuple(settings.redact_extra_patterns)  # a file name may hold a phone number
            documents = [shown_path(s, extra) for s in skipped if s.lower().endswith(".json")]
            if documents:
                logger.warning("skipped %d .json file(s) holding one JSON document, not log lines or LoCoMo: %s",
                               len(documents), ", ".join(d.rsplit("/", 1)[-1] for d in documents[:5]))
            summary = IngestSummary(skipped_files=len(skipped), skipped_documents=documents)
            batches = file_batches([(f, file_size(f)) for f in files], settings.ingest_batch_files)
            for i, batch in enumerate(batches, start=1):
                label = f"{i}/{len(batches)}"
                for result in ingest_batch(settings, batch, project.strip() or None, force, label=label):
                    summary.add(result)
                report("ingest", summary.files, len(files))
                logger.info("batch %s: %d/%d files read", label, summary.files, len(files))
            counts.update(summary.as_dict())
            counts.message = summary.message()
            logger.info("ingested %d files: %s; +%d entries, %d rejects", summary.files, summary.by_status,
                        summary.entries_added, sum(summary.rejects.values()))
            create_markdown_artifact(markdown=_summary_markdown(summary, run_notes()), key="ingest-summary",
                                     description="What the last ingest read and refused")
    except ParameterError as exc:
        return refused(exc)
    publish_snapshot(settings)  # analysts query the snapshot, never the file flows write (docs/deploy.md)
    return Completed(message=counts.message, data=summary)  # the UI shows the message on the run page

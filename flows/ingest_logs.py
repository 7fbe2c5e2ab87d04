"""Flow `ingest_logs`: read log files and folders into DuckDB, incrementally and idempotently."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run

from chronicle.ingest.model import IngestSummary
from chronicle.names import bounded_label
from chronicle.params import OptionalProjectId, ReRead, SourcePaths
from chronicle.progress import report
from chronicle.settings import load_settings
from services.runs import tracked_run
from storage.snapshot import publish_snapshot
from tasks.ingest import discover_files, ingest_file, shown_path


def _summary_markdown(summary: IngestSummary) -> str:
    rows = "\n".join(f"| {reason} | {n} |" for reason, n in sorted(summary.rejects.items())) or "| — | 0 |"
    return (
        f"# Ingest\n\nfiles: {summary.files} ({summary.by_status}), "
        f"entries added: {summary.entries_added}, removed: {summary.entries_removed}, "
        f"skipped non-log files: {summary.skipped_files}\n\n| reject reason | count |\n|---|---|\n{rows}\n"
    )


def _run_name() -> str:
    params = flow_run.parameters
    paths = params.get("paths") or []
    extra = tuple(load_settings().redact_extra_patterns)
    what = shown_path(paths[0], extra).rsplit("/", 1)[-1] if len(paths) == 1 else f"{len(paths)}-paths"
    return f"ingest-{bounded_label(str(params.get('project') or 'all'), limit=60)}-{what}"


@flow(name="ingest-logs", flow_run_name=_run_name, log_prints=False)
def ingest_logs(paths: SourcePaths, project: OptionalProjectId = None, force: ReRead = False) -> IngestSummary:
    """Ingest daily notes, JSONL/NDJSON, CSV and LoCoMo files found under `paths` (recursive).

    An unchanged file (same size, mtime and content fingerprint) is skipped, an appended one adds only its
    new lines, a rewritten one is replaced; bad lines land in `rejects` with a reason and the good lines of
    the same file still load. `force` re-reads every file whole (same rows when nothing changed).
    """
    settings = load_settings()
    logger = get_run_logger()
    params: dict[str, Any] = {"paths": paths, "project": project} | ({"force": True} if force else {})
    with tracked_run(settings, "ingest-logs", params) as counts:
        files, skipped = discover_files(paths)
        summary = IngestSummary(skipped_files=len(skipped))
        for i, path in enumerate(files, start=1):
            summary.add(ingest_file(settings, path, project, force))
            report("ingest", i, len(files))
        counts.update(summary.as_dict())
        logger.info("ingested %d files: %s; +%d entries, %d rejects", summary.files, summary.by_status,
                    summary.entries_added, sum(summary.rejects.values()))
        create_markdown_artifact(markdown=_summary_markdown(summary), key="ingest-summary",
                                 description="What the last ingest read and refused")
    publish_snapshot(settings)  # analysts query the snapshot, never the file flows write (docs/deploy.md)
    return summary

"""Flow `ingest_logs`: read log files and folders into DuckDB, incrementally and idempotently."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run

from chronicle.params import OptionalProjectId, SourcePaths
from chronicle.progress import report
from chronicle.settings import get_settings
from services.runs import tracked_run
from storage.snapshot import publish_snapshot
from tasks.ingest import discover_files, ingest_file


def _summary_markdown(summary: dict[str, Any]) -> str:
    rows = "\n".join(f"| {reason} | {n} |" for reason, n in sorted(summary["rejects"].items())) or "| — | 0 |"
    return (
        f"# Ingest\n\nfiles: {summary['files']} ({dict(summary['by_status'])}), "
        f"entries added: {summary['entries_added']}, removed: {summary['entries_removed']}, "
        f"skipped non-log files: {summary['skipped_files']}\n\n| reject reason | count |\n|---|---|\n{rows}\n"
    )


def _run_name() -> str:
    params = flow_run.parameters
    paths = params.get("paths") or []
    what = Path(paths[0]).name if len(paths) == 1 else f"{len(paths)}-paths"
    return f"ingest-{params.get('project') or 'all'}-{what}"


@flow(name="ingest-logs", flow_run_name=_run_name, log_prints=False)
def ingest_logs(paths: SourcePaths, project: OptionalProjectId = None) -> dict[str, Any]:
    """Ingest daily notes, JSONL/NDJSON, CSV and LoCoMo files found under `paths` (recursive).

    An unchanged file is skipped, an appended one adds only its new lines, a rewritten one is
    replaced; bad lines land in `rejects` with a reason and the good lines of the same file still load.
    """
    settings = get_settings()
    logger = get_run_logger()
    with tracked_run(settings, "ingest-logs", {"paths": paths, "project": project}) as counts:
        files, skipped = discover_files(paths)
        by_status: Counter[str] = Counter()
        rejects: Counter[str] = Counter()
        added = removed = 0
        for i, path in enumerate(files, start=1):
            result = ingest_file(path, project)
            by_status[result["status"]] += 1
            rejects.update(result["rejects"])
            added += result["entries_added"]
            removed += result["entries_removed"]
            report("ingest", i, len(files))
        summary = {"files": len(files), "by_status": dict(by_status), "entries_added": added,
                   "entries_removed": removed, "rejects": dict(rejects), "skipped_files": len(skipped)}
        counts.update(summary)
        logger.info("ingested %d files: %s; +%d entries, %d rejects", len(files), dict(by_status), added,
                    sum(rejects.values()))
        create_markdown_artifact(markdown=_summary_markdown(summary), key="ingest-summary",
                                 description="What the last ingest read and refused")
    publish_snapshot(settings)  # analysts query the snapshot, never the file flows write (docs/deploy.md)
    return summary

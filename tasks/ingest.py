"""Ingest tasks: thin Prefect wrappers over `chronicle.services.ingest` (no retries: nothing here is networked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from chronicle.ingest.detect import discover
from chronicle.ingest.model import FileResult
from chronicle.names import bounded_label
from chronicle.redaction.configured import redactor_for
from chronicle.redaction.redactor import Redactor
from chronicle.services.ingest import FileIngestor
from chronicle.services.run_tracking import current_flow_run_id
from chronicle.settings import Settings


@task(name="discover-files", cache_policy=NO_CACHE)
def discover_files(paths: list[str]) -> tuple[list[str], list[str]]:
    files, skipped = discover([Path(p) for p in paths])
    return [str(f) for f in files], [str(s) for s in skipped]


def shown_path(path: str, redactor: Redactor) -> str:
    """`memory/2026-03-02.md`: the file and its folder, any secret in them redacted (a phone number in a
    note's file name), bounded — what run names and logs show of a path."""
    parts = Path(path).parts[-2:]
    return bounded_label(redactor.redact("/".join(parts)), limit=100)


def ingest_task_name(parameters: dict[str, Any]) -> str:
    settings = parameters.get("settings")
    redactor = redactor_for(settings) if isinstance(settings, Settings) else Redactor.build()
    paths = parameters.get("paths") or []
    first = shown_path(str(paths[0]), redactor) if paths else "none"
    more = f" +{len(paths) - 1} files" if len(paths) > 1 else ""
    return f"ingest {parameters.get('label', '')} {first}{more}".replace("  ", " ")


# The files' own state in `ingest_files` is the cache: an unchanged file is skipped there. One task run per
# batch, not per file: 10,000 small files show as a handful of task runs, each with a table of its files.
@task(name="ingest-batch", task_run_name=ingest_task_name, cache_policy=NO_CACHE)
def ingest_batch(settings: Settings, paths: list[str], project: str | None, force: bool = False,
                 label: str = "", replace: bool = False) -> list[FileResult]:
    ingestor = FileIngestor(settings, project, run_id=current_flow_run_id())
    results = ingestor.ingest_many([Path(p) for p in paths], force=force, replace=replace)
    create_table_artifact(table=_outcome_rows(settings, results), key=None,
                          description=f"ingest {label}: one row per file ({len(results)} files)")
    return results


def _outcome_rows(settings: Settings, results: list[FileResult]) -> list[dict[str, Any]]:
    redactor = redactor_for(settings)  # a file name may hold a phone number
    return [{"file": shown_path(r.path, redactor), "format": r.format, "status": r.status,
             "added": r.entries_added, "removed": r.entries_removed,
             "rejects": ", ".join(f"{k}: {v}" for k, v in sorted(r.rejects.items())),
             "duplicates": ", ".join(f"{shown_path(f, redactor)}: {n}" for f, n in sorted(r.duplicates.items())),
             "same as": shown_path(r.same_as, redactor) if r.same_as else "",
             "reason": redactor.redact(r.reason) if r.reason else ""}
            for r in results]


def file_size(path: str) -> int:
    """Bytes of `path` for batching; 0 when it vanished since discovery (its batch reports the error)."""
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0

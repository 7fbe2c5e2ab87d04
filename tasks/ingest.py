"""Ingest tasks: thin Prefect wrappers over `services.ingest` (no retries: nothing here is networked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from chronicle.distill.redact import redact_name
from chronicle.ingest.detect import discover
from chronicle.ingest.model import FileResult
from chronicle.names import bounded_label
from chronicle.settings import Settings
from services.ingest import FileIngestor


@task(name="discover-files", cache_policy=NO_CACHE)
def discover_files(paths: list[str]) -> tuple[list[str], list[str]]:
    files, skipped = discover([Path(p) for p in paths])
    return [str(f) for f in files], [str(s) for s in skipped]


def shown_path(path: str, extra_patterns: tuple[str, ...] = ()) -> str:
    """`memory/2026-03-02.md`: the file and its folder, any secret in them redacted (a phone number in a
    note's file name), bounded — what run names and logs show of a path."""
    parts = Path(path).parts[-2:]
    return bounded_label(redact_name("/".join(parts), extra_patterns), limit=100)


def ingest_task_name(parameters: dict[str, Any]) -> str:
    settings = parameters.get("settings")
    extra = tuple(settings.redact_extra_patterns) if isinstance(settings, Settings) else ()
    return f"ingest {shown_path(str(parameters['path']), extra)}"


# The file's own state in `ingest_files` is the cache: an unchanged file is skipped there.
@task(name="ingest-file", task_run_name=ingest_task_name, cache_policy=NO_CACHE)
def ingest_file(settings: Settings, path: str, project: str | None, force: bool = False) -> FileResult:
    return FileIngestor(settings, project).ingest(Path(path), force=force)

"""Ingest tasks: thin Prefect wrappers over `services.ingest` (no retries: nothing here is networked)."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from chronicle.ingest.detect import discover
from chronicle.ingest.model import FileResult
from chronicle.settings import Settings
from services.ingest import FileIngestor


@task(name="discover-files", cache_policy=NO_CACHE)
def discover_files(paths: list[str]) -> tuple[list[str], list[str]]:
    files, skipped = discover([Path(p) for p in paths])
    return [str(f) for f in files], [str(s) for s in skipped]


# The file's own state in `ingest_files` is the cache: an unchanged file is skipped there.
@task(name="ingest-file", task_run_name="ingest {path}", cache_policy=NO_CACHE)
def ingest_file(settings: Settings, path: str, project: str | None, force: bool = False) -> FileResult:
    return FileIngestor(settings, project).ingest(Path(path), force=force)

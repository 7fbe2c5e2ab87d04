"""A batch of files in one write window gives, file by file, what reading them one at a time gives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from chronicle.ingest.detect import discover
from chronicle.services.ingest import FileIngestor
from chronicle.settings import Settings
from tests.conftest import DATA, SAMPLE_MAP


def _db(home: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def _stored(home: Path) -> dict[str, list[tuple]]:
    return {
        "rows": _db(home, "SELECT entry_id, project_id, source, source_file, line_no, ts, week_number, type, content, "
                          "metadata::VARCHAR FROM raw_logs ORDER BY entry_id"),
        "rejects": _db(home, "SELECT reject_id, source_file, line_no, reason, detail, raw FROM rejects ORDER BY 1"),
        "files": _db(home, "SELECT path, format, size, parsed_bytes, parsed_lines, prefix_sha256, entries, rejects, "
                           "content_sha256 FROM ingest_files ORDER BY path"),
    }


@pytest.fixture()
def inputs(tmp_path: Path, sample_dir: Path) -> Path:
    """Good logs, CSV, daily notes and every kind of bad file, in one folder."""
    folder = tmp_path / "in"
    shutil.copytree(DATA / "bad", folder / "bad")
    shutil.copytree(sample_dir / "logs", folder / "logs")
    for i in range(12):  # enough small files for appends, a rewrite and unchanged ones side by side
        (folder / "small").mkdir(exist_ok=True)
        (folder / "small" / f"s{i:03d}.jsonl").write_text(json.dumps(
            {"project_id": "P", "ts": f"2026-01-{1 + i % 28:02d}T10:00:00+08:00", "content": f"line {i}"}) + "\n")
    return folder


def _read(home: Path, monkeypatch: pytest.MonkeyPatch, files: list[Path], batched: bool) -> list:
    monkeypatch.setenv("CHRONICLE_HOME", str(home))
    monkeypatch.setenv("CHRONICLE_COLUMN_MAP", json.dumps(SAMPLE_MAP))
    monkeypatch.setenv("CHRONICLE_INGEST_SETTLE_S", "0")
    ing = FileIngestor(Settings())
    return ing.ingest_many(files) if batched else [ing.ingest(f) for f in files]


def test_a_batch_stores_what_file_by_file_reads_store(tmp_path: Path, inputs: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    files, _ = discover([inputs])
    assert len(files) > 40
    one_by_one = _read(tmp_path / "a", monkeypatch, files, batched=False)
    batch = _read(tmp_path / "b", monkeypatch, files, batched=True)
    assert batch == one_by_one  # per-file status, entries added/removed, rejects by reason
    assert _stored(tmp_path / "b") == _stored(tmp_path / "a")
    assert {r.status for r in batch} >= {"ingested", "rejected"}

    # Appends, a rewrite, a new file and unchanged files mixed in one batch: still the same, file by file.
    small = sorted((inputs / "small").iterdir())
    with small[0].open("a") as fh:
        fh.write(json.dumps({"project_id": "P", "ts": "2026-01-09T10:00:00+08:00", "content": "appended"}) + "\n")
        fh.write("{broken\n")
    small[1].write_text(json.dumps({"project_id": "Q", "ts": "2026-01-09T10:00:00+08:00", "content": "new"}) + "\n")
    (inputs / "small" / "zz.jsonl").write_text("not json\n")
    files, _ = discover([inputs])
    again_one = _read(tmp_path / "a", monkeypatch, files, batched=False)
    again_batch = _read(tmp_path / "b", monkeypatch, files, batched=True)
    assert again_batch == again_one
    statuses = {r.path.rsplit("/", 1)[-1]: r.status for r in again_batch}
    assert statuses["s000.jsonl"] == "appended" and statuses["s001.jsonl"] == "ingested"
    assert statuses["s002.jsonl"] == "unchanged"
    assert _stored(tmp_path / "b") == _stored(tmp_path / "a")

    # A rerun of the batch changes nothing and reads nothing again.
    before = _stored(tmp_path / "b")
    assert {r.status for r in _read(tmp_path / "b", monkeypatch, files, batched=True)} == {"unchanged"}
    assert _stored(tmp_path / "b") == before


def test_the_flow_reads_a_folder_as_a_handful_of_task_runs(home: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """30 files in batches of 10: three `ingest` task runs (not 30), each with a table artifact of its files."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter, FlowRunFilterId

    from chronicle.flows.ingest_logs import ingest_logs

    folder = tmp_path / "sessions"
    folder.mkdir()
    for i in range(30):
        (folder / f"s{i:02d}.jsonl").write_text(json.dumps(
            {"project_id": "P", "ts": "2026-01-05T10:00:00+08:00", "content": f"session {i}"}) + "\n")
    monkeypatch.setenv("CHRONICLE_INGEST_BATCH_FILES", "10")
    summary = ingest_logs([str(folder)])
    assert summary.files == 30 and summary.entries_added == 30 and summary.by_status == {"ingested": 30}
    [(run_id,)] = _db(home, "SELECT flow_run_id FROM pipeline_runs WHERE flow_name = 'ingest-logs'")
    with get_client(sync_client=True) as client:
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(run_id)])))
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(
            any_=[UUID(run_id)])))
    names = sorted(t.name for t in tasks if t.name.startswith("ingest "))
    assert len(names) == 3 and names[0].startswith("ingest 1/3 sessions/s00.jsonl +9 files"), names
    tables = [json.loads(a.data) for a in arts if a.type == "table"]
    assert sorted(len(t) for t in tables) == [10, 10, 10]
    assert {row["status"] for t in tables for row in t} == {"ingested"}

"""The core storage behaviours, run against BOTH topologies: the embedded DuckDB file and the lake
(DuckLake on the real PostgreSQL + S3 endpoint of this session). Same code, same SQL, same results."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import DATA
from tests.lake.helpers import settings_for

XH201 = ("2025-05.jsonl", "2025-06.jsonl")
BAD = ("broken_json.jsonl", "bad_timestamps.jsonl", "ragged.csv", "empty.jsonl", "binary.jsonl")
TABLES = ("raw_logs", "rejects", "ingest_files", "weekly_reports", "weekly_report_versions", "pipeline_runs",
          "llm_calls", "memory_events", "distill_chunks", "distill_quarantine", "chronicle_rollups")


@pytest.fixture(params=["embedded", "lake"])
def backend(request: pytest.FixtureRequest, home: Path):
    """Settings of one topology (passed explicitly, as the entry points do)."""
    if request.param == "embedded":
        return settings_for(home, {})
    return settings_for(home, request.getfixturevalue("lake_env"))


def _inputs(sample_dir: Path, tmp_path: Path) -> list[Path]:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in XH201:
        shutil.copy(sample_dir / "logs" / "XH201" / name, folder / name)
    for name in BAD:
        shutil.copy(DATA / "bad" / name, folder / name)
    return sorted(folder.iterdir())


def _ingest(settings, files: list[Path]) -> list:
    from chronicle.services.ingest import FileIngestor

    ingestor = FileIngestor(settings)
    return [ingestor.ingest(f) for f in files]


def _rows(settings, sql: str, params: list | None = None) -> list[tuple]:
    from chronicle.storage.db import connect

    with connect(settings) as conn:
        return conn.execute(sql, params or []).fetchall()


def _state(settings) -> dict[str, list[tuple]]:
    return {
        "raw_logs": _rows(settings, "SELECT entry_id, project_id, ts, week_number, type, content, metadata::VARCHAR "
                                    "FROM raw_logs ORDER BY entry_id"),
        "rejects": _rows(settings, "SELECT reject_id, reason, line_no, raw, safety FROM rejects ORDER BY reject_id"),
        "files": _rows(settings, "SELECT path, size, parsed_bytes, entries, rejects FROM ingest_files ORDER BY 1"),
    }


def test_ingest_is_idempotent_and_keeps_rejects(backend, sample_dir: Path, tmp_path: Path) -> None:
    files = _inputs(sample_dir, tmp_path)
    _ingest(backend, files)
    first = _state(backend)
    reasons = dict(_rows(backend, "SELECT reason, count(*) FROM rejects GROUP BY 1"))
    assert {"invalid_json", "csv_field_count", "empty_file", "binary_file"} <= set(reasons), reasons
    assert first["raw_logs"] and len({r[0] for r in first["raw_logs"]}) == len(first["raw_logs"])
    # Twice: unchanged files are skipped; forced re-reads (touched files) add nothing either.
    assert {r.status for r in _ingest(backend, files)} == {"unchanged"}
    for f in files:
        f.touch()
    _ingest(backend, files)
    assert _state(backend) == first
    # An appended JSONL line is the only new row.
    target = files[0] if files[0].suffix == ".jsonl" and files[0].name in XH201 else tmp_path / "in" / XH201[0]
    with target.open("a", encoding="utf-8") as f:
        f.write('{"project_id": "XH201", "ts": "2025-06-02T09:00:00+08:00", "actor": "CRA", "type": "ae", '
                '"content": "新增 AE：头痛 1 级"}\n')
    (result,) = _ingest(backend, [target])
    assert (result.status, result.entries_added) == ("appended", 1)
    assert len(_state(backend)["raw_logs"]) == len(first["raw_logs"]) + 1
    # A refused line naming an SAE is flagged as it is stored (an UPDATE in the lake's commit too); none undecided.
    with target.open("a", encoding="utf-8") as f:
        f.write('{"project_id": "XH201", "ts": "2025-06-03T09:00:00+08:00", "type": "sae", "content": "住院\n')
    _ingest(backend, [target])
    flagged = _rows(backend, "SELECT source_file, safety FROM rejects WHERE safety OR safety IS NULL")
    assert flagged == [(str(target), True)], flagged


def test_reports_versions_and_edits_are_truth(backend, sample_dir: Path, tmp_path: Path) -> None:
    from chronicle.services.weekly import plan_week, read_week, run_week
    from chronicle.storage import reports
    from chronicle.storage.db import transactions
    from chronicle.weeks import IsoWeek

    _ingest(backend, _inputs(sample_dir, tmp_path))
    weeks = [IsoWeek.from_number(n) for n in (202519, 202520, 202521)]
    def outcomes(run_id: str) -> list[str]:
        return [run_week(backend, plan_week(backend, "XH201", w), run_id).outcome.outcome for w in weeks]

    assert outcomes("run-1") == ["generated"] * 3
    assert outcomes("run-2") == ["cached"] * 3
    week_input, stored = read_week(backend, "XH201", weeks[1])
    for attempt in transactions(backend, guard=reports.guard_keys(["XH201"])):
        with attempt as conn:
            version = reports.save_edit(conn, "XH201", weeks[1].number, "人工更正：本周入组 2 人。",
                                        citations={}, input_hash=week_input.input_hash, stats=week_input.stats,
                                        author="qa", reason="corrected", base_version=stored.version,
                                        review_reasons=[])
    assert version == 2
    forced = run_week(backend, plan_week(backend, "XH201", weeks[1], force=True), "run-3")
    assert forced.outcome.outcome == "skipped-edited"
    overwritten = run_week(backend, plan_week(backend, "XH201", weeks[2], force=True), "run-3")
    assert overwritten.outcome.outcome == "generated"
    assert _rows(backend, "SELECT project_id, week_number, count(*) FROM weekly_reports GROUP BY ALL "
                          "HAVING count(*) > 1") == []
    assert _rows(backend, "SELECT week_number, version, status FROM weekly_report_versions ORDER BY 1, 2") == [
        (202519, 1, "generated"), (202520, 1, "generated"), (202520, 2, "edited"),
        (202521, 1, "generated"), (202521, 2, "generated")]
    assert _rows(backend, "SELECT c.summary, c.status, r.version FROM chronicle c JOIN weekly_reports r USING "
                          "(project_id, week_number) WHERE week_number = 202520") == [
        ("人工更正：本周入组 2 人。", "edited", 2)]
    created = _rows(backend, "SELECT created_at <= updated_at FROM weekly_reports")
    assert created and all(ok for (ok,) in created)


def test_run_and_llm_ledgers(backend) -> None:
    from chronicle.llm.records import LLMCallRecord
    from chronicle.storage import pipeline_runs as runs
    from chronicle.storage.db import write
    from chronicle.storage.llm_log import DuckDBCallLogger

    write(backend, lambda c: runs.run_started(c, "run-1", "backfill-weeks", {"project_id": "all"}))
    write(backend, lambda c: runs.run_started(c, "run-1", "backfill-weeks", {"project_id": "all"}))  # a retry
    write(backend, lambda c: runs.run_finished(c, "run-1", "COMPLETED", {"weeks": 3}))
    assert _rows(backend, "SELECT flow_run_id, state, counts->>'weeks' FROM pipeline_runs") == [
        ("run-1", "COMPLETED", "3")]
    record = LLMCallRecord("call-1", datetime(2026, 3, 2, 8, tzinfo=UTC), "m", "http://llm/v1", "weekly_report",
                           "XH201", 202610, "h", "prompt", "reply", 10, 5, 120, "ok", None, 200, 1)
    logger = DuckDBCallLogger(backend, "run-1")
    logger.log(record)
    logger.log(record)  # the same attempt logged twice is stored once
    assert _rows(backend, "SELECT call_id, attempt, flow_run_id FROM llm_calls") == [("call-1", 1, "run-1")]
    assert _rows(backend, "SELECT calls, tokens_in, tokens_out FROM llm_usage") == [(1, 10, 5)]


def test_same_schema_and_results_on_both_topologies(lake_env: dict[str, str], home: Path, sample_dir: Path,
                                                    tmp_path: Path) -> None:
    """Column names and types of every table and view, and the analyst views' rows, agree."""
    from chronicle.services.weekly import plan_week, run_week
    from chronicle.weeks import IsoWeek

    embedded, lake = settings_for(home, {}), settings_for(home, lake_env)
    files = _inputs(sample_dir, tmp_path)
    schema_sql = ("SELECT table_name, column_name, data_type FROM information_schema.columns "
                  "WHERE table_catalog = current_database() AND table_schema = 'main' ORDER BY 1, ordinal_position")
    results = []
    for settings in (embedded, lake):
        _ingest(settings, files)
        for n in (202519, 202520):
            run_week(settings, plan_week(settings, "XH201", IsoWeek.from_number(n)), "run-1")
        results.append({
            "schema": [r for r in _rows(settings, schema_sql) if r[0] != "chronicle_claims"],
            "weekly_stats": _rows(settings, "SELECT * FROM weekly_stats ORDER BY project_id, week_number"),
            "chronicle": _rows(settings, "SELECT project_id, week_number, summary, status, engine FROM chronicle "
                                         "ORDER BY 1, 2"),
            "memory_stats": _rows(settings, "SELECT * FROM memory_stats"),
            "counts": {t: _rows(settings, f"SELECT count(*) FROM {t}")[0][0] for t in TABLES},
        })
    assert results[0]["schema"] and {r[0] for r in results[0]["schema"]} >= {*TABLES, "weekly_stats", "chronicle"}
    assert results[0] == results[1]

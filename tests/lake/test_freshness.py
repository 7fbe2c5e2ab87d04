"""Freshness: the `pipeline_freshness` / `pipeline_run_freshness` views and `chronicle status`, on the
embedded DuckDB file and on the lake (DuckLake on this session's real PostgreSQL + S3). Same answers on both."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.lake.helpers import settings_for


@pytest.fixture(params=["embedded", "lake"])
def backend(request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch):
    """Settings of one topology, also in the environment (the CLI builds its own from it)."""
    env = {} if request.param == "embedded" else request.getfixturevalue("lake_env")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield settings_for(home, env)
    from chronicle.storage import lake

    lake.close_sessions()


def test_freshness_says_what_is_missing(backend, sample_dir: Path, tmp_path: Path) -> None:
    from chronicle.services.freshness import freshness
    from chronicle.services.ingest import FileIngestor
    from chronicle.services.weekly import plan_week, run_week
    from chronicle.storage import pipeline_runs as runs
    from chronicle.storage.db import write
    from chronicle.weeks import IsoWeek

    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(sample_dir / "logs" / "XH201" / "2025-05.jsonl", folder / "2025-05.jsonl")
    FileIngestor(backend).ingest(folder / "2025-05.jsonl")

    empty = freshness(backend)
    (project,) = empty.projects
    assert project.project_id == "XH201" and project.last_current_week is None and not project.up_to_date
    weeks = sorted(set(project.missing_weeks))
    assert len(weeks) >= 4 and weeks == list(project.missing_weeks)

    for number in weeks[:-1]:  # every ended week but the last
        job = plan_week(backend, "XH201", IsoWeek.from_number(number))
        assert run_week(backend, job, "run-1").outcome.outcome == "generated"
    now = datetime.now(UTC).replace(tzinfo=None)
    write(backend, lambda c: runs.run_started(c, "w-1", "weekly-chronicle", {}))
    write(backend, lambda c: runs.run_finished(c, "w-1", "COMPLETED", {}))
    write(backend, lambda c: runs.run_started(c, "i-1", "ingest-logs", {}))
    write(backend, lambda c: runs.run_finished(c, "i-1", "FAILED", {}, "endpoint down"))

    report = freshness(backend)
    (project,) = report.projects
    assert project.missing_weeks == (weeks[-1],)
    assert project.last_current_week == weeks[-2]
    assert not project.up_to_date
    by_flow = {f.flow_name: f for f in report.flows}
    assert not by_flow["weekly-chronicle"].overdue and by_flow["weekly-chronicle"].age < timedelta(minutes=5)
    assert by_flow["weekly-chronicle"].last_completed >= now - timedelta(minutes=5)
    assert by_flow["ingest-logs"].overdue and by_flow["ingest-logs"].last_state == "FAILED"
    assert report.failures["ingest-logs"] == 1
    assert by_flow["distill-memory"].verdict == "never completed"
    problems = "\n".join(report.problems())
    label = f"{weeks[-1] // 100}-W{weeks[-1] % 100:02d}"
    assert f"XH201: 1 ended week(s) with entries but no report: {label}" in problems
    assert "ingest-logs: never completed" in problems and "1 failure(s) since" in problems

    run_week(backend, plan_week(backend, "XH201", IsoWeek.from_number(weeks[-1])), "run-2")
    (project,) = freshness(backend).projects
    assert project.up_to_date and project.last_current_week == weeks[-1] == project.last_ended_week


def test_status_command_exits_1_with_the_problems(backend, sample_dir: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chronicle.cli.main import app
    from chronicle.services.ingest import FileIngestor

    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(sample_dir / "logs" / "XH201" / "2025-05.jsonl", folder / "2025-05.jsonl")
    FileIngestor(backend).ingest(folder / "2025-05.jsonl")
    result = CliRunner().invoke(app, ["status", "--format", "json"])
    assert result.exit_code == 1, result.output
    assert '"missing": "2025-W' in result.output and '"verdict": "never completed"' in result.output

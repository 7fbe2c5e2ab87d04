"""kill -9 of a real backfill process at seeded random points while it writes reports, then a rerun:
no week lost, none duplicated, every row equal to an undisturbed run's."""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.reliability.killer import python_cmd
from tests.reliability.procs import (
    WEEKLY_DIES_AT_WRITE_DRIVER,
    WEEKLY_DRIVER,
    Pace,
    child_env,
    run_marked,
    spread_points,
)

PROJECT = "XH201"
N_KILLS = 4  # random points; two more kills land between write windows on purpose (below)
REPORT_COLS = "week_number, summary, stats, citations, model, prompt_version, input_hash, entry_count, status, " \
              "needs_review, version"


def reports(db: Path) -> dict[int, tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(f"SELECT {REPORT_COLS} FROM weekly_reports WHERE project_id = ? ORDER BY 1",
                            [PROJECT]).fetchall()
    return {r[0]: r[1:] for r in rows}


def versions(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute("SELECT week_number, version, summary, input_hash FROM weekly_report_versions "
                            "WHERE project_id = ? ORDER BY 1, 2", [PROJECT]).fetchall()


def week_numbers(db: Path) -> list[int]:
    with duckdb.connect(str(db), read_only=True) as conn:
        first, last = conn.execute("SELECT min(week_number), max(week_number) FROM raw_logs WHERE project_id = ?",
                                   [PROJECT]).fetchall()[0]
    from chronicle.weeks import IsoWeek, week_range

    return [w.number for w in week_range(IsoWeek.from_number(first), IsoWeek.from_number(last))]


def use_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:

    monkeypatch.setenv("CHRONICLE_HOME", str(home))


@pytest.mark.slow
def test_kill_during_backfill_then_rerun(home: Path, tmp_path: Path, sample_dir: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.settings import PREFECT_API_URL

    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.ingest_logs import ingest_logs

    ingest_logs([str(sample_dir / "logs" / PROJECT)])
    base = home / "chronicle.duckdb"
    assert not Path(str(base) + ".wal").exists()  # fully checkpointed: the file alone is the database
    api = PREFECT_API_URL.value()
    cmd = [*python_cmd(WEEKLY_DRIVER), PROJECT]

    def fresh(name: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy2(base, folder / "chronicle.duckdb")
        return folder

    clean = fresh("clean")
    # Groups of 8 weeks (the default sizes 56 offline weeks as two groups, each one write window, so a kill
    # would rarely land between two commits): the kill points then fall inside and between seven windows.
    env = lambda home: child_env(home, api, CHRONICLE_WEEKS_PER_TASK="8")  # noqa: E731
    duration, marked_at = run_marked(cmd, env(clean), tmp_path)
    expected, expected_versions = reports(clean / "chronicle.duckdb"), versions(clean / "chronicle.duckdb")
    # Kill points are drawn from the flow body up to the last report write of the undisturbed run.
    with duckdb.connect(str(clean / "chronicle.duckdb"), read_only=True) as conn:
        started, last_write = conn.execute(
            "SELECT min(r.started_at), max(w.created_at) FROM pipeline_runs r, weekly_reports w "
            "WHERE r.flow_name = 'backfill-weeks'").fetchall()[0]
    window = ((started - marked_at).total_seconds(), (last_write - marked_at).total_seconds())
    assert 0 < window[0] < window[1] < duration, (window, duration)
    weeks = week_numbers(base)
    assert sorted(expected) == weeks and len(weeks) == 56  # every week, including any without entries
    assert [(w, v) for w, v, _, _ in expected_versions] == [(w, 1) for w in weeks]

    def killed_then_rerun(folder: Path, label: str) -> int:
        """Check the state a kill left and that a rerun repairs it; the number of weeks the kill left stored."""
        db = folder / "chronicle.duckdb"
        # Straight after the kill: every stored week is whole and final; the others are simply missing.
        after_kill = reports(db)
        assert {w: expected[w] for w in after_kill} == after_kill, f"{label}: a report differs"
        assert versions(db) == [v for v in expected_versions if v[0] in after_kill], \
            f"{label}: versions disagree with the reports"

        use_home(monkeypatch, folder)
        rows = backfill_weeks(project_id=PROJECT)
        ran = {r.week_number for r in rows if r.outcome in ("generated", "empty")}
        assert ran == set(weeks) - set(after_kill), f"{label}: the rerun redid stored weeks"
        assert reports(db) == expected, label
        assert versions(db) == expected_versions, f"{label}: lost or duplicated versions"
        return len(after_kill)

    killed = 0
    pace = Pace(duration)
    for i, point in enumerate(spread_points(seed=20261201, n=N_KILLS, start=window[0], end=window[1])):
        hit, name = pace.kill(cmd, tmp_path, point, lambda name: env(fresh(name)), f"killed{i}")
        killed += hit
        killed_then_rerun(tmp_path / name, f"kill at {point:.2f}s")
    # Timings are noisy on a shared machine: a kill run may finish before its point, or not have started writing.
    assert killed >= N_KILLS - 2, f"only {killed} of {N_KILLS} runs were still working when killed {window}"

    # Between two write windows, every time: after the first window's commit, and inside the third one
    # (its reports written, its commit not reached).
    for n, where in ((1, "after"), (3, "inside")):
        name = f"dies-{where}-{n}"
        dying = [*python_cmd(WEEKLY_DIES_AT_WRITE_DRIVER), PROJECT, str(n), where]
        ran = subprocess.run(dying, env=env(fresh(name)), cwd=tmp_path, capture_output=True, text=True,
                             timeout=300)
        assert ran.returncode == -signal.SIGKILL, f"{name}: no death ({ran.returncode}): {ran.stderr[-2000:]}"
        stored = killed_then_rerun(tmp_path / name, name)
        assert 0 < stored < len(weeks), f"{name}: {stored} of {len(weeks)} weeks stored when it died"

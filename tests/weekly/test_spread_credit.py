"""A spread backfill credits each week to the run that wrote it, even a child killed before it reported."""

from __future__ import annotations

from pathlib import Path

from chronicle.services import week_dibs as spread
from chronicle.services.weekly import plan_project, plan_week, run_week

from chronicle.settings import Settings
from chronicle.weekly.outcome import WeekOutcome


def test_weeks_a_killed_child_wrote_are_the_childs_not_cached(trial: Path) -> None:
    from chronicle.tasks.fan_out.workers import _credit_children

    settings = Settings()
    plan = plan_project(settings, "XH201")
    weeks = [job.week for job in plan.to_run[:10]]
    # The child (run "child-run") wrote the first 8 weeks, then was killed before publishing its rows.
    for week in weeks[:8]:
        run_week(settings, plan_week(settings, "XH201", week), "child-run")
    # The parent's sweep then ran all 10: 8 found current (cached), 2 written by the parent itself.
    swept = [WeekOutcome("XH201", w.number, "cached", "offline-extractive", 3) for w in weeks[:8]]
    swept += [run_week(settings, plan_week(settings, "XH201", w), "parent-run").outcome for w in weeks[8:]]
    theirs, mine = _credit_children(settings, swept, {"child-run"})
    assert sorted(r.week_number for r in theirs) == sorted(w.number for w in weeks[:8])
    assert {r.outcome for r in theirs} <= {"generated", "empty"} and "cached" not in {r.outcome for r in theirs}
    assert [r.week_number for r in mine] == [w.number for w in weeks[8:]]
    # A week a run of its own (not a child) left current stays cached.
    theirs, mine = _credit_children(settings, swept[:8], {"another-child"})
    assert theirs == [] and {r.outcome for r in mine} == {"cached"}


def test_a_small_offline_backfill_is_not_spread(trial: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings = Settings()
    assert settings.offline_llm
    assert not spread.worth_spreading(settings, 20)
    assert spread.worth_spreading(settings, spread.SPREAD_MIN_OFFLINE_WEEKS)
    monkeypatch.setenv("LLM_URL", "http://127.0.0.1:9/v1")
    assert spread.worth_spreading(Settings(), 2)  # LLM weeks cost seconds: two already pay


def test_a_child_that_started_is_told_apart_from_one_that_never_did(trial: Path) -> None:
    """The parent stops waiting for a child not yet working (every week is taken) but treats one that started and
    went silent as dead (Crashed, its weeks credited to it): the `started` mark outlives the heartbeat."""
    settings = Settings()
    assert not spread.has_started(settings, "batch-1", 1)
    with spread.alive(settings, "batch-1", 1):
        assert spread.is_alive(settings, "batch-1", 1) and spread.has_started(settings, "batch-1", 1)
    assert not spread.is_alive(settings, "batch-1", 1)
    assert spread.has_started(settings, "batch-1", 1)  # ended (or died): it had started
    assert not spread.has_started(settings, "batch-1", 2) and not spread.has_started(settings, "batch-2", 1)
    # A child that starts once every week has its dibs taken ends without planning: it counts them first.
    assert spread.take(settings, "batch-1", 0, [("XH201", 202520), ("XH201", 202521)]) == [
        ("XH201", 202520), ("XH201", 202521)]
    assert spread.take(settings, "batch-1", 1, [("XH201", 202521)]) == []
    assert spread.taken_count(settings, "batch-1") == 2 and spread.taken_count(settings, "batch-2") == 0

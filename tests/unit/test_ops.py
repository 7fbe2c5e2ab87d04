"""Pure operations rules: the weekly deadline window, flow ages against schedules, freshness wording."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from chronicle.ops import ProjectFreshness, deadline_window, human_age, judge_flows, weekly_cron_start


def test_weekly_cron_start() -> None:
    assert weekly_cron_start("0 2 * * 1") == (0, 2, 0)
    assert weekly_cron_start("30 23 * * 0") == (6, 23, 30)
    with pytest.raises(ValueError):
        weekly_cron_start("*/5 * * * *")


@pytest.mark.parametrize(("deadline", "expected"), [
    ("Mon 09:00", timedelta(hours=7)),          # the default: 02:00 -> 09:00 the same Monday
    ("monday 02:30", timedelta(minutes=30)),
    ("Mon 01:00", timedelta(days=6, hours=23)),  # before the schedule: the next Monday
    ("Tue 02:00", timedelta(days=1)),
    ("7h", timedelta(hours=7)), ("90m", timedelta(minutes=90)), ("45s", timedelta(seconds=45)),
])
def test_deadline_window(deadline: str, expected: timedelta) -> None:
    assert deadline_window(deadline, "0 2 * * 1", "Asia/Shanghai") == expected


@pytest.mark.parametrize("bad", ["Mon", "Foo 09:00", "Mon 25:00", "8d", "soon", "0s"])
def test_deadline_window_refuses(bad: str) -> None:
    with pytest.raises(ValueError, match="alert_weekly_deadline"):
        deadline_window(bad, "0 2 * * 1", "UTC")


def test_judge_flows_against_their_schedules() -> None:
    now = datetime(2026, 3, 10, 12, 0)
    ages = {f.flow_name: f for f in judge_flows({
        "ingest-logs": (now - timedelta(minutes=30), "COMPLETED"),
        "weekly-chronicle": (now - timedelta(days=8), "FAILED"),
    }, now, ingest_interval_minutes=60)}
    assert ages["ingest-logs"].verdict == "ok"
    assert ages["weekly-chronicle"].overdue and ages["weekly-chronicle"].last_state == "FAILED"
    assert ages["distill-memory"].verdict == "never completed"
    assert human_age(ages["weekly-chronicle"].age) == "8d 0h" and human_age(None) == "—"


def test_a_flow_that_never_completed_is_late_by_the_pipeline_clock_or_by_a_failure() -> None:
    """A fresh install that ran ingest and a backfill is not behind on its Monday job until the pipeline is older
    than that job's schedule allows; a run of it that failed is a problem at once."""
    now = datetime(2026, 3, 10, 12, 0)
    ran = {"ingest-logs": (now - timedelta(minutes=5), "COMPLETED")}

    def judged(first_run: datetime, **more: tuple[datetime | None, str | None]) -> dict[str, bool]:
        return {f.flow_name: f.overdue for f in judge_flows({**ran, **more}, now, 60, first_run)}

    assert judged(now - timedelta(hours=2)) == {"ingest-logs": False, "weekly-chronicle": False,
                                                "distill-memory": False}
    assert judged(now - timedelta(days=4)) == {"ingest-logs": False, "weekly-chronicle": False,
                                               "distill-memory": True}
    assert judged(now - timedelta(days=8))["weekly-chronicle"]
    assert judged(now - timedelta(hours=2), **{"weekly-chronicle": (None, "FAILED")})["weekly-chronicle"]
    assert not judged(now - timedelta(hours=2), **{"weekly-chronicle": (None, "RUNNING")})["weekly-chronicle"]
    assert all(f.overdue for f in judge_flows({}, now, 60))  # no run at all: nothing has ever completed


def test_project_freshness_problems() -> None:
    ok = ProjectFreshness("A", 202610, 202610, (), (), (202605,), None, None)
    assert ok.up_to_date and ok.problems() == []  # review weeks are shown, not a failure
    late = ProjectFreshness("B", 202610, 202608, (202609, 202610), (202603,), (), None, None)
    assert not late.up_to_date
    assert late.problems() == ["2 ended week(s) with entries but no report: 2026-W09, 2026-W10",
                               "1 stale report(s) (entries changed since): 2026-W03"]


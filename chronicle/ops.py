"""Pure operations rules: when the weekly run is overdue, and how old is too old for each flow.

No Prefect, no database: `chronicle.deployments.automations` turns the deadline into a proactive trigger's window and
`chronicle.services.freshness` judges the ages `pipeline_freshness` reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DURATION = re.compile(r"^\s*(\d+)\s*([smhd])\s*$", re.I)
_WEEKDAY_TIME = re.compile(r"^\s*([a-z]{3})[a-z]*\s+(\d{1,2}):(\d{2})\s*$", re.I)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# A Monday: the weekly schedule and the deadline are compared on one fixed week (no DST change that week in
# any zone we know of), so the answer does not depend on today's date.
_REFERENCE_MONDAY = (2026, 1, 5)


def weekly_cron_start(cron: str) -> tuple[int, int, int]:
    """(weekday 0=Monday, hour, minute) of a weekly cron `M H * * D` (the weekly chronicle's `0 2 * * 1`)."""
    parts = cron.split()
    if len(parts) != 5 or not all(p.isdigit() for p in (parts[0], parts[1], parts[4])) or parts[2:4] != ["*", "*"]:
        raise ValueError(f"not a weekly cron 'M H * * D': {cron!r}")
    minute, hour, dow = int(parts[0]), int(parts[1]), int(parts[4])
    return (dow - 1) % 7, hour, minute  # cron: 0 and 7 are Sunday, 1 Monday


def deadline_window(deadline: str, cron: str, timezone: str) -> timedelta:
    """How long after the weekly run is scheduled it must have Completed.

    `deadline` is a local weekday and time (`Mon 09:00`: the first such moment after the schedule, in
    `timezone`) or a duration (`7h`, `90m`, `45s`, `1d`). Raises ValueError with the accepted forms.
    """
    if m := _DURATION.match(deadline):
        window = timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2).lower()])
    elif m := _WEEKDAY_TIME.match(deadline):
        day = m.group(1).lower()
        if day not in _DAYS or int(m.group(2)) > 23 or int(m.group(3)) > 59:
            raise ValueError(f"alert_weekly_deadline {deadline!r}: weekday Mon..Sun and a time HH:MM")
        zone = ZoneInfo(timezone)
        s_day, s_hour, s_minute = weekly_cron_start(cron)
        base = datetime(*_REFERENCE_MONDAY, tzinfo=zone)
        start = base + timedelta(days=s_day, hours=s_hour, minutes=s_minute)
        due = base + timedelta(days=_DAYS.index(day), hours=int(m.group(2)), minutes=int(m.group(3)))
        while due <= start:
            due += timedelta(days=7)
        window = due - start
    else:
        raise ValueError(f"alert_weekly_deadline {deadline!r}: use a weekday and time ('Mon 09:00') "
                         "or a duration ('7h', '90m', '45s')")
    if window <= timedelta(0) or window > timedelta(days=7):
        raise ValueError(f"alert_weekly_deadline {deadline!r}: must fall within a week after the schedule")
    return window


@dataclass(frozen=True)
class FlowAge:
    """The last successful run of one scheduled flow, judged against its schedule."""

    flow_name: str
    last_completed: datetime | None
    """UTC, naive (as stored in pipeline_runs)."""
    age: timedelta | None
    allowed: timedelta
    """Schedule period plus grace: older than this means a scheduled run was missed or failed."""
    last_state: str | None
    """State of the most recent run, whatever it was (COMPLETED, FAILED, CRASHED, RUNNING)."""
    pipeline_age: timedelta | None = None
    """Time since the first run of any flow: a flow that never completed is late only once the pipeline has
    been running longer than the flow's schedule allows (a cron monitor's grace after a schedule starts), so a
    fresh install that ran ingest and a backfill is not reported behind on its Monday job."""

    @property
    def overdue(self) -> bool:
        if self.age is None:  # never completed: late when a run of it ended without success, or by the clock
            return (self.last_state not in (None, "RUNNING") or self.pipeline_age is None
                    or self.pipeline_age > self.allowed)
        return self.age > self.allowed

    @property
    def verdict(self) -> str:
        if self.last_completed is None:
            return "never completed"
        return "OVERDUE" if self.overdue else "ok"


def allowed_ages(ingest_interval_minutes: int, grace: timedelta = timedelta(hours=1)) -> dict[str, timedelta]:
    """The age at which each scheduled flow's last success is too old: its period (deployments/definitions.py)
    plus `grace` for the run's own duration."""
    return {
        "ingest-logs": timedelta(minutes=ingest_interval_minutes) + grace,
        "weekly-chronicle": timedelta(days=7) + grace,
        "distill-memory": timedelta(days=3) + grace,
    }


def judge_flows(last: dict[str, tuple[datetime | None, str | None]], now: datetime,
                ingest_interval_minutes: int, first_run: datetime | None = None) -> list[FlowAge]:
    """One `FlowAge` per scheduled flow from {flow_name: (last completed at, last state)} and the start of the
    first run of any flow; `now` and `first_run` naive UTC."""
    out = []
    for name, allowed in allowed_ages(ingest_interval_minutes).items():
        completed, state = last.get(name, (None, None))
        out.append(FlowAge(name, completed, now - completed if completed else None, allowed, state,
                           now - first_run if first_run else None))
    return out


def human_age(age: timedelta | None) -> str:
    """`3d 4h`, `2h 05m`, `45s`; `—` for none."""
    if age is None:
        return "—"
    s = int(age.total_seconds())
    if s >= 86400:
        return f"{s // 86400}d {s % 86400 // 3600}h"
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s}s"


@dataclass(frozen=True)
class ProjectFreshness:
    """One row of the `pipeline_freshness` view."""

    project_id: str
    last_ended_week: int | None
    last_current_week: int | None
    """Latest week with a report that is not stale."""
    missing_weeks: tuple[int, ...]
    """Ended weeks with entries but no report."""
    stale_weeks: tuple[int, ...]
    review_weeks: tuple[int, ...]
    last_entry_at: datetime | None
    last_ingested_at: datetime | None

    @property
    def up_to_date(self) -> bool:
        return not self.missing_weeks and not self.stale_weeks and (
            self.last_ended_week is None or (self.last_current_week or 0) >= self.last_ended_week)

    def problems(self) -> list[str]:
        """What is missing, in words (empty when up to date; weeks needing review are reported, not a problem)."""
        out = []
        if self.missing_weeks:
            out.append(f"{len(self.missing_weeks)} ended week(s) with entries but no report: "
                       f"{_weeks(self.missing_weeks)}")
        if self.stale_weeks:
            out.append(f"{len(self.stale_weeks)} stale report(s) (entries changed since): {_weeks(self.stale_weeks)}")
        if self.last_ended_week and (self.last_current_week or 0) < self.last_ended_week and not self.missing_weeks:
            out.append(f"no current report for the last ended week {_weeks((self.last_ended_week,))}")
        return out


def _weeks(weeks: tuple[int, ...], most: int = 8) -> str:
    shown = [f"{w // 100}-W{w % 100:02d}" for w in weeks[:most]]
    return ", ".join(shown) + (f" … (+{len(weeks) - most})" if len(weeks) > most else "")


def week_list(weeks: tuple[int, ...]) -> str:
    """`2026-W03, 2026-W05` (at most 8, then a count)."""
    return _weeks(weeks) if weeks else "—"

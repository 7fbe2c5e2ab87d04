"""A flow's parameters checked against what is stored, before the flow does anything.

Flows call these first thing (inside their run record, so a refused run is in `pipeline_runs` with its
reason), and the CLI calls the same functions before starting a flow: every way of starting a run gets
the same one-line `ParameterError`. The rules themselves are pure (`chronicle.param_checks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import NamedTuple

from chronicle.param_checks import (
    ParameterError,
    check_between,
    check_paths,
    check_project,
    check_range,
    check_roots,
    parse_day,
    parse_week,
)
from chronicle.settings import Settings
from chronicle.storage import queries
from chronicle.storage.db import read
from chronicle.weeks import IsoWeek

__all__ = ["DistillWindow", "ParameterError", "WeekScope", "backfill_scope", "distill_window", "existing_project",
           "ingest_paths", "one_week", "weekly_scope"]


@dataclass(frozen=True)
class WeekScope:
    """Which projects and which weeks a weekly flow covers (None = the project's first / last week)."""

    projects: list[str]
    start: IsoWeek | None
    end: IsoWeek | None

    def describe(self) -> str:
        weeks = f"{self.start or 'first'}..{self.end or 'last'}"
        who = ", ".join(self.projects[:5]) + (f" and {len(self.projects) - 5} more" if len(self.projects) > 5 else "")
        return f"{who or 'no project'} {weeks}"


def existing_project(settings: Settings, project_id: str, name: str = "project_id") -> str:
    """`project_id` if it has entries, else a ParameterError listing the projects that do."""
    return check_project(project_id, read(settings, queries.projects), name)


def backfill_scope(settings: Settings, project_id: str, start_week: str | None, end_week: str | None, *,
                   names: tuple[str, str, str] = ("project_id", "start_week", "end_week")) -> WeekScope:
    """`project_id` (or `all`) and an optional week range, checked: syntax first, then the range, then the
    project against the database."""
    start, end = parse_week(start_week, names[1]), parse_week(end_week, names[2])
    check_range(start, end, names[1], names[2])
    known = read(settings, queries.projects)
    if project_id.strip().lower() == "all":
        return WeekScope(known, start, end)
    return WeekScope([check_project(project_id, known, names[0])], start, end)


def weekly_scope(settings: Settings, week: str | None, name: str = "week") -> WeekScope:
    """Every project, one week (None = each project's last completed week)."""
    iso = parse_week(week, name)
    return WeekScope(read(settings, queries.projects), iso, iso)


def one_week(settings: Settings, project_id: str, week: str) -> tuple[str, IsoWeek]:
    iso = parse_week(week, "week")
    if iso is None:
        raise ParameterError("week is empty: write an ISO week, e.g. 2026-W05")
    return check_project(project_id, read(settings, queries.projects), "project_id"), iso


def input_roots(settings: Settings) -> list[Path]:
    """Where input may come from: `input_roots`, the home, the working directory (not `/`) and `source_paths`."""
    cwd = Path.cwd().resolve()
    ingest = settings.ingest
    roots = [*ingest.input_roots, *ingest.source_paths, settings.home, *([cwd] if cwd != cwd.parent else [])]
    return [Path(r).expanduser().resolve() for r in roots]


def ingest_paths(settings: Settings, paths: Sequence[str], name: str = "paths") -> list[str]:
    """The paths, all of which must exist (a typo in a folder name is not an empty ingest) inside an input root
    (a run started through the API reads as the worker's user: it may not name `/root/...`)."""
    given = [str(p).strip() for p in paths if str(p).strip()]
    check_paths(given, [p for p in given if not Path(p).expanduser().exists()], name)
    roots = input_roots(settings)
    check_roots(given, [p for p in given if not any(Path(p).expanduser().resolve().is_relative_to(r)
                                                     for r in roots)], name)
    return given


class DistillWindow(NamedTuple):
    """Which notes a distillation reads, as checked: None = the setting, today, every project's notes."""

    days: int | None
    until: date | None
    project: str | None


def distill_window(settings: Settings, days: int | None, until: str | date | None, project: str | None = None, *,
                   names: tuple[str, str, str] = ("days", "until", "project")) -> DistillWindow:
    if days is not None and days != 0:
        check_between(days, names[0], 1, 366)
    day = parse_day(until, names[1])
    if project is None or not project.strip():
        return DistillWindow(days or None, day, None)
    return DistillWindow(days or None, day, check_project(project, read(settings, queries.projects), names[2]))

"""Parameter checks shared by every entry point: the UI form, `run_deployment`, `prefect deployment run`
and the CLI all reach the same functions, so they all give the same one-line answer.

Pure: the caller supplies what it read (the known projects); nothing here touches storage or Prefect.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from datetime import date

from chronicle.names import bounded_label
from chronicle.redaction.configured import entry_redactor
from chronicle.weeks import IsoWeek

WEEK_FORMAT = "YYYY-Www, e.g. 2026-W05"
"""How an ISO week is written in every parameter, help text and error message."""

DAY_FORMAT = "YYYY-MM-DD, e.g. 2026-04-26"

_WEEK = re.compile(r"(\d{4})-[Ww](\d{2})")


class ActionNeeded(RuntimeError):
    """Stored data needs an operator's action before this can run (e.g. `chronicle memory reindex` after the
    embedding model changed). The message says which, in one line; entry points print it without a traceback."""


class ParameterError(ValueError):
    """A parameter that cannot be right. The message names the parameter, the value and what would do."""


def weeks_in_year(year: int) -> int:
    """52 or 53: December 28th always falls in the year's last ISO week."""
    return date(year, 12, 28).isocalendar().week


def parse_week(text: str | None, name: str) -> IsoWeek | None:
    """`YYYY-Www` -> IsoWeek; empty or None -> None (the caller's default). Anything else raises."""
    value = (text or "").strip()
    if not value:
        return None
    match = _WEEK.fullmatch(value)
    if not match or int(match[1]) < 1:
        raise ParameterError(f"{name} {value!r} is not an ISO week: write {WEEK_FORMAT}")
    year, week = int(match[1]), int(match[2])
    last = weeks_in_year(year)
    if not 1 <= week <= last:
        raise ParameterError(f"{name} {value!r} does not exist: {year} has ISO weeks W01 to W{last} ({WEEK_FORMAT})")
    return IsoWeek(year, week)


def check_range(start: IsoWeek | None, end: IsoWeek | None, start_name: str, end_name: str) -> None:
    """A reversed range is a mistake, never an empty run."""
    if start is not None and end is not None and start > end:
        raise ParameterError(f"{start_name} {start} is after {end_name} {end}: the range is reversed")


def _listing(names: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_project(project: str, known: Sequence[str], name: str = "project_id") -> str:
    """The project id, stripped, if it has entries; else an error naming it and the known projects."""
    value = project.strip()
    if not value:
        raise ParameterError(f"{name} is empty: give a project id" + (f" ({_listing(known)})" if known else ""))
    if value in known:
        return value
    if not known:
        raise ParameterError(f"unknown project {value!r}: no project has entries yet (run `chronicle ingest` first)")
    close = difflib.get_close_matches(value, list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ParameterError(f"unknown project {value!r}{hint}; known projects: {_listing(list(known))}")


def parse_day(text: str | date | None, name: str) -> date | None:
    """`YYYY-MM-DD` (or a date) -> date; empty or None -> None."""
    if isinstance(text, date):
        return text
    value = (text or "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ParameterError(f"{name} {value!r} is not a day: write {DAY_FORMAT}") from None


def check_between(value: int, name: str, low: int, high: int) -> int:
    if not low <= value <= high:
        raise ParameterError(f"{name} {value} is out of range: {low} to {high}")
    return value


def check_size(name: str, size: int, most: int, unit: str = "characters") -> None:
    """Text from an untrusted client (an assistant over MCP) bounded before anything reads it. The text itself is
    not repeated: it may hold what the redactor hides."""
    if size > most:
        raise ParameterError(f"{name}: {size:,} {unit}; at most {most:,}")


def _paths(paths: Sequence[str], chosen: Sequence[str]) -> str:
    """`chosen` listed, with their places among `paths` when there are several: a path with a generated name
    (`export_a8Fk29dLq0.jsonl`) is redacted wherever a message is shown, and its place still says which it was."""
    listed = _listing([str(p) for p in chosen], 5)
    if len(paths) < 2:
        return listed
    picked = set(chosen)
    places = [str(i) for i, p in enumerate(paths, start=1) if p in picked]
    return f"{listed} (no. {_listing(places, 5)} of the {len(paths)} given)"


def check_paths(paths: Sequence[str], missing: Sequence[str], name: str = "paths") -> None:
    """`missing` are the paths the caller found not to exist."""
    if not [p for p in paths if str(p).strip()]:
        raise ParameterError(f"{name} is empty: give log files or folders (or set CHRONICLE_SOURCE_PATHS)")
    if missing:
        raise ParameterError(f"no such file or folder: {_paths(paths, missing)}")


def check_roots(paths: Sequence[str], outside: Sequence[str], name: str = "paths") -> None:
    """`outside`: the paths the caller found outside every input root (the message names the setting)."""
    if outside:
        raise ParameterError(f"{name}: outside the input roots: {_paths(paths, outside)} "
                             "(add the folder to CHRONICLE_INPUT_ROOTS to allow it)")


def week_label(text: object, fallback: str) -> str:
    """A week for a run name: `2026W05`, `fallback` when empty, the raw text when invalid. Never raises:
    a run-name function that raised would crash the run before its parameters are even checked."""
    try:
        week = parse_week(None if text is None else str(text), "week")
    except (ParameterError, ValueError):
        return name_part(text, fallback)
    return fallback if week is None else f"{week.year}W{week.week:02d}"


def name_part(value: object, fallback: str, limit: int = 40) -> str:
    """A parameter as part of a run name: redacted (a run name is shown in the UI, logs, lineage events and
    artifacts: a secret typed into a parameter must not reach them), bounded, without characters a name
    should not carry. Redacted alone, before it is joined to the rest of the name, so the part is judged as
    what it is (`…-13912345678` inside `backfill-…-first..last` would read as an id). By the operator's redaction
    settings: a run's name is a sink like the others."""
    text = re.sub(r"[^\w.-]+", "_", entry_redactor().redact(str(value or "").strip())).strip("_")
    return bounded_label(text, limit=limit) if text else fallback

"""What happened to one project-week in a run: the typed row every weekly flow, the CLI and the artifacts share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from chronicle.weeks import IsoWeek

Outcome = Literal["generated", "cached", "skipped-edited", "empty", "failed"]

TABLE_COLUMNS = ("project", "week", "outcome", "engine", "duration_s", "entries", "llm_calls", "needs_review")
"""Columns of the outcome table (Prefect table artifact, `chronicle backfill` output)."""


@dataclass(frozen=True)
class WeekOutcome:
    """One week's result: `generated` (new text), `cached` (current report kept), `skipped-edited` (a human
    edit kept), `empty` (the fixed no-entries page) or `failed` (`message` says why)."""

    project: str
    week_number: int
    outcome: Outcome
    engine: str
    entries: int
    llm_calls: int = 0
    needs_review: bool = False
    reasons: tuple[str, ...] = field(default_factory=tuple)
    duration_s: float = 0.0
    why: str = ""
    message: str | None = None

    @property
    def week(self) -> str:
        """`2026-W05`."""
        return str(IsoWeek.from_number(self.week_number))

    def table_row(self) -> dict[str, Any]:
        """The row of the outcome table artifact."""
        return {c: getattr(self, c) for c in TABLE_COLUMNS}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"week": self.week, "reasons": list(self.reasons)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WeekOutcome:
        """The row `as_dict()` made (e.g. read back from another run's table artifact)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["reasons"] = tuple(values.get("reasons") or ())
        return cls(**values)

    def timed(self, seconds: float) -> WeekOutcome:
        return replace(self, duration_s=round(seconds, 3))


def failed(project: str, week: IsoWeek, entries: int, exc: BaseException, seconds: float) -> WeekOutcome:
    """The row of a week whose task raised."""
    return WeekOutcome(project, week.number, "failed", "-", entries, duration_s=round(seconds, 3),
                       message=f"{type(exc).__name__}: {exc}"[:500])


def outcome_counts(rows: Iterable[WeekOutcome]) -> dict[str, int]:
    return dict(Counter(r.outcome for r in rows))


def run_message(rows: Sequence[WeekOutcome], scope: str) -> str:
    """The sentence a weekly run ends with (its Prefect state message and `pipeline_runs.message`): what it
    did, or why it had nothing to do — a run that changed nothing says so instead of looking like work."""
    if not rows:
        return f"nothing to do: no entries in {scope}"
    counts = outcome_counts(rows)
    done = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    if set(counts) <= {"cached", "skipped-edited"}:
        said = (f"nothing to do: all {len(rows)} week(s) of {scope} already have current reports ({done}); "
                "force regenerates them")
    else:
        said = f"{len(rows)} week(s) of {scope}: {done}"
    return said + review_note(rows)


def review_note(rows: Iterable[WeekOutcome]) -> str:
    """`; 47 week(s) need review (...)`, or nothing: a run whose reports wait for a human must not read as
    a plain success, in its state message as in its summary."""
    flagged = sum(1 for r in rows if r.needs_review and r.outcome != "failed")
    if not flagged:
        return ""
    return f"; {flagged} week(s) need review (`chronicle review` lists them)"


class WeeksFailedError(RuntimeError):
    """Some weeks failed; every other week was stored. `rows` is the full outcome table."""

    def __init__(self, rows: Sequence[WeekOutcome]) -> None:
        bad = [r for r in rows if r.outcome == "failed"]
        first = bad[0] if bad else None
        where = f"{first.project} {first.week}: {first.message}" if first else "?"
        super().__init__(f"{len(bad)} of {len(rows)} week(s) failed (first: {where}); rerun to retry only those")
        self.rows = list(rows)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.rows,))


class GroupFailedError(RuntimeError):
    """Weeks of one group task failed; `results` holds every week's outcome (or its error), in order."""

    def __init__(self, results: Sequence[Any], first: str = "") -> None:
        bad = sum(1 for r in results if isinstance(r, BaseException))
        super().__init__(f"{bad} of {len(results)} week(s) of this group failed (first: {first or '?'})")
        self.results, self.first = list(results), first

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.results, self.first))

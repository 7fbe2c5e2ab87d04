"""Report use cases: read a stored week with its current inputs, correct it (the edit is the truth), trace it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from chronicle.services.weekly import read_week
from chronicle.storage import reports
from chronicle.storage.db import connect, transactions

from chronicle.redaction.redactor import Redactor
from chronicle.settings import Settings
from chronicle.weekly.faithfulness import cited_ids
from chronicle.weekly.model import WeekInput
from chronicle.weeks import IsoWeek


class NoReportError(LookupError):
    """The week has no stored report yet (generate it before reading or correcting it)."""


@dataclass(frozen=True)
class ReportView:
    """A stored report and the week's inputs now (to tell whether the text is stale)."""

    row: dict[str, Any]
    current: WeekInput

    @property
    def stale(self) -> bool:
        return bool(self.row["stale"]) or self.current.input_hash != self.row["input_hash"]


@dataclass(frozen=True)
class EditResult:
    version: int
    unknown_citations: tuple[str, ...]
    """Citations in the new text that are not entries of the week (kept as text only)."""
    redacted: dict[str, int] = field(default_factory=dict)
    """Secrets hidden in the edit, by kind (an edit is a report: it feeds the chronicle, `ask` and the LLM)."""


def view_report(settings: Settings, project_id: str, week: IsoWeek) -> ReportView:
    with connect(settings, read_only=True) as conn:
        row = reports.get_report(conn, project_id, week.number)
    if row is None:
        raise NoReportError(f"no report for {project_id} {week}")
    return ReportView(row, read_week(settings, project_id, week)[0])


def edit_report(settings: Settings, project_id: str, week: IsoWeek, text: str, *, author: str,
                reason: str | None) -> EditResult:
    """Store a human correction as the week's new version; regeneration keeps it from now on.

    Citations are resolved against the week's entries now, and the edit records the inputs it was
    written against, so a later change to the week marks it stale instead of overwriting it.
    """
    hidden: Counter[str] = Counter()
    redactor = Redactor.build(settings.redact_extra_patterns)
    text = redactor.redact(text, hidden)
    # Who and why are stored with the version and shown by `report history`: the same sink as the text.
    author = redactor.redact(author, hidden)
    reason = redactor.redact(reason, hidden) if reason is not None else None
    week_input, _ = read_week(settings, project_id, week)
    known = week_input.citation_map
    cited = cited_ids(text)
    for attempt in transactions(settings, guard=reports.guard_keys([project_id])):
        with attempt as conn:  # the guard keeps version numbers unique across lake writers
            version = reports.save_edit(conn, project_id, week.number, text.strip(),
                                        citations={s: known[s] for s in cited if s in known},
                                        input_hash=week_input.input_hash, stats=week_input.stats,
                                        author=author, reason=reason)
    return EditResult(version, tuple(s for s in cited if s not in known), dict(hidden))



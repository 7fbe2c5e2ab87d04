"""The review queue of the weekly chronicle: weeks the faithfulness guard flagged, and accepting them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chronicle.services.audit import audit_row
from chronicle.settings import Settings
from chronicle.storage import desk, reports, review
from chronicle.storage.db import connect, transactions
from chronicle.weekly.faithfulness import describe
from chronicle.weeks import IsoWeek


@dataclass(frozen=True)
class FlaggedWeek:
    """One week awaiting review, with its reasons as stored and as one human line each."""

    project_id: str
    week: str
    week_number: int
    status: str
    model: str
    version: int
    reasons: list[dict[str, Any]] = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        return [describe(r) for r in self.reasons]

    def as_dict(self) -> dict[str, Any]:
        return {"project_id": self.project_id, "week": self.week, "week_number": self.week_number,
                "status": self.status, "model": self.model, "version": self.version,
                "reasons": [{**r, "line": line} for r, line in zip(self.reasons, self.lines, strict=True)]}


def flagged_weeks(settings: Settings, project_id: str | None = None) -> list[FlaggedWeek]:
    with connect(settings) as conn:
        rows = review.review_queue(conn, project_id)
    return [FlaggedWeek(r["project_id"], str(IsoWeek.from_number(r["week_number"])), r["week_number"], r["status"],
                        r["model"], r["version"], list(r["review_reasons"])) for r in rows]


def accept(settings: Settings, project_id: str, week: IsoWeek, *, reviewer: str, note: str | None = None,
           remote: str = "cli") -> int | None:
    """Accept a flagged week as it stands, without a signature (the CLI without a desk account); the accepted
    version, or None when it was not flagged. An audit row either way. With a desk account, accepting is a
    signature of meaning "reviewed" instead (services.reports.sign_report)."""
    version = None
    for attempt in transactions(settings, guard=reports.guard_keys([project_id])):
        with attempt as conn:
            version = review.accept_review(conn, project_id, week.number, reviewer=reviewer, note=note)
            desk.insert_audit(conn, audit_row(actor=reviewer, action="accept",
                                              outcome="ok" if version is not None else "refused:not-flagged",
                                              project_id=project_id, week_number=week.number, version=version,
                                              detail={"note": note, "signed": False}, remote=remote))
    return version

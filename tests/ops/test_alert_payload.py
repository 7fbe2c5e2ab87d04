"""The backfill's needs-attention event: sent only when a week failed or needs review."""

from __future__ import annotations

from chronicle.services.alerts import attention_payload
from chronicle.weekly.outcome import WeekOutcome


def test_payload_only_when_someone_must_look() -> None:
    fine = [WeekOutcome("A", 202601, "generated", "offline", 3), WeekOutcome("A", 202602, "cached", "offline", 3)]
    assert attention_payload(fine, "ok") is None
    rows = [*fine, WeekOutcome("A", 202603, "failed", "offline", 3, message="endpoint down"),
            WeekOutcome("A", 202604, "generated", "offline", 3, needs_review=True)]
    payload = attention_payload(rows, "2 of 4")
    assert payload is not None
    assert (payload["weeks"], payload["failed"], payload["needs_review"]) == (4, 1, 1)
    assert payload["failed_weeks"] == ["A 2026-W03"] and payload["review_weeks"] == ["A 2026-W04"]

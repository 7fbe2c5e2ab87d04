"""A distillation run's one line names what needs a person, and only then."""

from __future__ import annotations

from datetime import date

from chronicle.distill.summary import DistillSummary
from chronicle.distill.tally import Tally


def _summary(**counts: int) -> DistillSummary:
    return DistillSummary(date(2026, 2, 14), date(2026, 2, 24), "offline", "offline-rules", "v1", Tally(**counts), 9)


def test_a_clean_run_says_what_it_did() -> None:
    line = _summary(chunks=3, distilled=2, cached=1, memories=7).message()
    assert line == "3 chunk(s) of 2026-02-14..2026-02-24: 2 distilled, 1 unchanged; 7 memories"


def test_quarantined_chunks_and_new_proposals_are_named() -> None:
    line = _summary(chunks=2, distilled=0, quarantined=2, proposals_new=1).message()
    assert "2 chunk(s) quarantined" in line and "1 new proposal(s) to approve or reject" in line
    assert "chronicle memory proposals" in line

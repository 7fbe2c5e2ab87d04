"""Markdown views of weekly reports and run outcomes (Prefect artifacts, `chronicle report show`).

Report text and reasons quote log lines: they go through `markup.inert` (no HTML, image, link or URL a browser
would act on); the Markdown around them is ours."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chronicle.markup import inert
from chronicle.weekly.faithfulness import describe
from chronicle.weekly.labels import language_of_text, stat_label
from chronicle.weekly.model import WeekReport
from chronicle.weekly.outcome import WeekOutcome, outcome_counts, review_note

_COUNTS = ("entries", "enrolled", "enrolled_total", "ae", "sae", "deviations", "queries", "decisions", "messages")


def stats_table(stats: Mapping[str, Any], text: str) -> str:
    """The week's counts under the names a reader of the report's language (`text`) uses ("累计入组", not the
    view's `enrolled_total`)."""
    lang = language_of_text([text])
    head = "| " + " | ".join(stat_label(k, lang) for k in _COUNTS) + " |"
    rule = "|" + "---|" * len(_COUNTS)
    return f"{head}\n{rule}\n| " + " | ".join(str(stats.get(k, "")) for k in _COUNTS) + " |"


def review_block(needs_review: bool, reasons: Sequence[Mapping[str, Any]]) -> str:
    if not needs_review:
        return ""
    items = "\n".join(f"- {inert(describe(r))}" for r in reasons) or "- (no reason recorded)"
    return f"> **needs review**\n\n{items}\n\n"


def report_markdown(report: WeekReport) -> str:
    """One generated report as a Prefect Markdown artifact."""
    w = report.week
    cites = ", ".join(f"{k}→{v[:10]}" for k, v in report.citations.items()) or "—"
    return (f"# {report.project_id} {w} ({w.start_date} – {w.end_date})\n\n"
            f"engine: `{report.model}`, prompt `{report.prompt_version}`, entries: {report.entry_count}, "
            f"LLM calls: {report.llm_calls}\n\n{review_block(report.needs_review, report.review_reasons)}"
            f"{inert(report.summary)}\n\n## Stats\n\n{stats_table(report.stats, report.summary)}\n\n"
            f"## Citations\n\n{cites}\n")


def outcome_markdown(title: str, rows: Sequence[WeekOutcome], notes: Sequence[str] = ()) -> str:
    """Summary of a fan-out by outcome, with the failed and flagged weeks spelled out, then `notes`
    (things an operator must see that would drown among the log lines, e.g. a wait for the database)."""
    counts = outcome_counts(rows)
    head = (", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no weeks") + review_note(rows)
    lines = [f"# {title}", "", head, ""]
    for row in rows:
        if row.outcome == "failed":
            lines.append(f"- FAILED {row.project} {row.week}: {inert(row.message or '')}")
        elif row.needs_review:
            # A kept report flagged by an earlier run has its reasons in the store, not always in this row.
            why = "; ".join(row.reasons) or "flagged when it was written (`chronicle report show` has the reasons)"
            lines.append(f"- needs review {row.project} {row.week} ({row.outcome}): {inert(why)}")
    if notes:
        lines += ["", "## Notes", "", *(f"- {inert(note)}" for note in notes)]
    return "\n".join(lines) + "\n"

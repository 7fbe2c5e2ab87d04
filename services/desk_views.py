"""The review desk's read use cases: the week grid, a project's chronicle and its search, one week with the log
entries its sentences cite, a week's versions and their diffs, the review queue.

Each page is one short read window (storage/desk_views.py); no page holds the database while it renders.
Which projects a person may see is decided above (the desk passes the visible project ids down).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chronicle.services.corrections import diff_lines
from chronicle.settings import Settings
from chronicle.storage import desk, desk_views, reports
from chronicle.storage.db import read
from chronicle.weekly.engine import why_written
from chronicle.weekly.faithfulness import cited_ids, describe, strip_citations
from chronicle.weekly.labels import STAT_LABELS, engine_label, language_of_text, stat_label, type_label
from chronicle.weekly.search import rank_weeks, stats_question, weeks_with
from chronicle.weeks import IsoWeek

STATE_LABELS = {
    "generated": "written by the latest run", "cached-current": "written earlier, still current",
    "edited": "corrected", "signed": "signed", "accepted": "reviewed and accepted", "flagged": "needs review",
    "stale": "log changed since written", "failed": "its last run failed", "empty": "nothing logged",
    "missing": "not written yet",
}
"""A grid cell's state (one per week; the keys are the page's classes and filter values) -> what a reviewer reads
for it. The order is the legend's."""
STATES = tuple(STATE_LABELS)


@dataclass(frozen=True)
class Cell:
    week_number: int
    week: str
    state: str
    entries: int


@dataclass(frozen=True)
class ProjectGrid:
    project_id: str
    years: list[tuple[int, list[Cell]]]
    """(ISO year, its weeks) so a 3-year trial reads as three lines."""
    counts: dict[str, int]


def cell_state(row: desk_views.GridRow, failed_after: dict[tuple[str, int], datetime], latest_run: str | None) -> str:
    """One state per week, the one a reviewer must act on first."""
    failed = failed_after.get((row.project_id, row.week_number))
    if row.status is None:
        if failed is not None:
            return "failed"
        return "empty" if row.entries == 0 else "missing"
    if failed is not None and row.updated_at is not None and failed > row.updated_at:
        return "failed"
    if row.needs_review:
        return "flagged"
    if row.stale:
        return "stale"
    if row.signed_version is not None and row.signed_version == row.version:
        return "signed"
    if row.reviewed_version is not None and row.reviewed_version == row.version:
        return "accepted"
    if row.status == "edited":
        return "edited"
    if row.entries == 0:
        return "empty"
    return "generated" if row.flow_run_id is not None and row.flow_run_id == latest_run else "cached-current"


@dataclass(frozen=True)
class GridPage:
    grids: list[ProjectGrid]
    page: int
    pages: int
    visible: int
    """Projects the person may see, in all."""


def visible(settings: Settings, can_read: Callable[[str], bool]) -> list[str]:
    """The projects `can_read(project_id)` allows, sorted."""
    return [p for p in read(settings, desk_views.all_projects) if can_read(p)]


def _grid_read(conn: Any, can_read: Callable[[str], bool], state: str | None, page: int,
               size: int) -> tuple[list[str], list[str], list[desk_views.GridRow], list[Any], str | None]:
    """One window: the visible projects, and the grid rows of one page of them (of all of them when filtering by
    state: which projects have such a week is known only from their rows)."""
    shown = [p for p in desk_views.all_projects(conn) if can_read(p)]
    wanted = shown if state else shown[(page - 1) * size: page * size]
    return (shown, wanted, desk_views.grid_rows(conn, wanted), desk_views.failed_weeks(conn),
            desk_views.latest_weekly_run(conn))


def grid_page(settings: Settings, can_read: Callable[[str], bool], *, state: str | None = None, page: int = 1,
              size: int = 40) -> GridPage:
    """One page of the week grid of the projects `can_read` allows; with `state`, only projects having at least
    one week in that state."""
    shown, wanted, rows, failed, latest = read(settings, _grid_read, can_read, state, max(page, 1), size)
    grids = _grids(wanted, rows, failed, latest)
    if state is not None:
        grids = [g for g in grids if g.counts.get(state)]
    pages = max(1, -(-(len(grids) if state else len(shown)) // size))
    page = min(max(page, 1), pages)
    return GridPage(grids[(page - 1) * size: page * size] if state else grids, page, pages, len(shown))


def _grids(project_ids: list[str], rows: list[desk_views.GridRow], failed: list[Any],
           latest: str | None) -> list[ProjectGrid]:
    failed_after: dict[tuple[str, int], datetime] = {}
    for started, project, week in failed:
        key = (project, week)
        failed_after[key] = max(started, failed_after.get(key, started))
    grids: dict[str, dict[int, list[Cell]]] = {}
    counts: dict[str, dict[str, int]] = {}
    # A page of 40 projects is ~6,000 cells over a few hundred distinct weeks: each week is named once.
    names: dict[int, tuple[int, str]] = {}
    for row in rows:
        s = cell_state(row, failed_after, latest)
        if (named := names.get(row.week_number)) is None:
            week = IsoWeek.from_number(row.week_number)
            named = names[row.week_number] = (week.year, str(week))
        grids.setdefault(row.project_id, {}).setdefault(named[0], []).append(
            Cell(row.week_number, named[1], s, row.entries))
        if (per := counts.get(row.project_id)) is None:
            per = counts[row.project_id] = dict.fromkeys(STATES, 0)
        per[s] += 1
    return [ProjectGrid(p, sorted(grids[p].items()), counts[p]) for p in project_ids if p in grids]


# --- the chronicle ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChronicleEntry:
    week_number: int
    week: str
    text: str
    status: str
    flagged: bool
    stale: bool
    stats: dict[str, Any]
    signed: list[str]


@dataclass(frozen=True)
class SearchHit:
    week_number: int
    week: str
    why: str
    text: str


@dataclass(frozen=True)
class SearchResult:
    question: str
    how: str
    """`stats` (a counted-event question answered from the stats) or `text` (negation-aware term match)."""
    hits: list[SearchHit]


def chronicle(settings: Settings, project_id: str) -> list[ChronicleEntry]:
    return [ChronicleEntry(r.week_number, str(IsoWeek.from_number(r.week_number)),
                           plain(r.summary), r.status, r.needs_review, r.stale, r.stats, r.signed)
            for r in read(settings, desk_views.chronicle, project_id)]


def plain(summary: str) -> str:
    """A report as running text: no citations, Markdown emphasis, heading or bullet marks."""
    lines = (_BULLET.sub("", _HEADING.sub("", line)) for line in strip_citations(summary).splitlines())
    return " ".join(" ".join(line.replace("**", "") for line in lines if line.strip()).split())


def search(weeks: list[ChronicleEntry], question: str, limit: int = 20) -> SearchResult:
    """Answer a question over a chronicle: from the stats when it asks when/how often a counted event happened,
    otherwise by the question's terms in the text, negated clauses ("无 AE/SAE") left out."""
    by_week = {w.week_number: w for w in weeks}
    field_name = stats_question(question)
    if field_name is not None:
        counted = weeks_with(field_name, [(w.week_number, w.stats) for w in weeks])
        label = stat_label(field_name, language_of_text([question]))
        return SearchResult(question, "stats", [SearchHit(n, by_week[n].week, f"{label} {c}", by_week[n].text)
                                                for n, c in counted])
    ranked = rank_weeks(question, [(w.week_number, w.text) for w in weeks], limit=limit)
    return SearchResult(question, "text", [SearchHit(n, by_week[n].week, ", ".join(terms), by_week[n].text)
                                           for n, _, terms in ranked])


# --- one week ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Citation:
    short_id: str
    entry_id: str | None
    """None when the text cites an id that is not an entry of the week."""


@dataclass(frozen=True)
class Sentence:
    text: str
    """As read: citations (shown as links), Markdown emphasis, heading and bullet marks taken out."""
    citations: list[Citation]
    reasons: list[str]
    heading: bool = False
    bullet: bool = False
    """The first sentence of a list item (a new item begins here)."""


@dataclass(frozen=True)
class SignatureView:
    signer: str
    printed_name: str
    meaning: str
    signed_at: datetime
    version: int
    current: bool
    """False when the week's text changed after it was signed: the signature belongs to that earlier version."""


@dataclass(frozen=True)
class WeekPage:
    project_id: str
    week: str
    week_number: int
    version: int
    status: str
    model: str
    stale: bool
    needs_review: bool
    summary: str
    sentences: list[Sentence]
    other_reasons: list[str]
    stats: dict[str, Any]
    entries: list[desk_views.EntryRow]
    short_ids: dict[str, str]
    """entry_id -> the short id the text cites it by."""
    signatures: list[SignatureView]
    flow_run_id: str | None
    reviewed_by: str | None
    updated_at: datetime | None
    extra: dict[str, Any] = field(default_factory=dict)
    stats_rows: list[tuple[str, str]] = field(default_factory=list)
    """The stats as (label, value) in the report's language: counts, then per entry type and per person."""
    type_names: dict[str, str] = field(default_factory=dict)
    """Entry type -> its label in the report's language, for the cited entries."""

    @property
    def no_entries(self) -> bool:
        """A week nothing was logged in: its text says so; a reviewer may still annotate and sign it."""
        return int(self.stats.get("entries") or 0) == 0

    @property
    def written_by(self) -> str:
        return engine_label(self.model)


def stats_rows(stats: dict[str, Any], lang: str) -> list[tuple[str, str]]:
    """A week's stats for people: readable labels, the counts first, breakdowns as "label n, label n"."""
    order = {k: i for i, k in enumerate(STAT_LABELS)}  # the counts' own order, whatever the stored JSON's
    stats = dict(sorted(stats.items(), key=lambda kv: order.get(kv[0], len(order))))
    counts = [(stat_label(k, lang), str(v)) for k, v in stats.items() if not isinstance(v, dict)]
    sep = "、" if lang == "zh" else ", "
    per = [(stat_label(k, lang), sep.join(f"{type_label(a, lang) if k == 'by_type' else a} {n}" for a, n in v.items())
            or "—") for k, v in stats.items() if isinstance(v, dict)]
    return counts + per


_SENTENCE_END = re.compile(r"(?<=[。；;！？!?])|(?<=\.)\s+")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)、])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")


def split_sentences(summary: str) -> list[tuple[str, bool, bool]]:
    """(sentence, is a heading, begins a list item) of the report, line by line; citations written after a
    sentence's full stop ("……住院。[E5]") stay with that sentence."""
    out: list[tuple[str, bool, bool]] = []
    for line in summary.splitlines():
        if not line.strip():
            continue
        heading, bullet = bool(_HEADING.match(line)), bool(_BULLET.match(line))
        line = _BULLET.sub("", _HEADING.sub("", line))
        first = True
        for part in (p for p in _SENTENCE_END.split(line) if p and p.strip()):
            if not first and not strip_citations(part).strip():
                out[-1] = (out[-1][0] + part, out[-1][1], out[-1][2])
                continue
            out.append((part.strip(), heading, bullet and first))
            first = False
    return out


def _shown(text: str) -> str:
    return " ".join(strip_citations(text).replace("**", "").split())


def _squash(text: str) -> str:
    return re.sub(r"[\s*#>\-]+", "", strip_citations(text))


def _sentences(summary: str, citations: dict[str, str], reasons: list[dict[str, Any]]) -> tuple[list[Sentence],
                                                                                                list[str]]:
    placed: set[int] = set()
    out = []
    for text, heading, bullet in split_sentences(summary):
        key = _squash(text)
        mine = []
        for i, r in enumerate(reasons):
            said = _squash(str(r.get("sentence") or r.get("text") or ""))
            if said and key and (said in key or key in said):
                mine.append(describe(r))
                placed.add(i)
        out.append(Sentence(_shown(text), [Citation(s, citations.get(s)) for s in cited_ids(text)], mine, heading,
                            bullet))
    return out, [describe(r) for i, r in enumerate(reasons) if i not in placed]


def _week_read(conn: Any, project_id: str, week_number: int) -> tuple[Any, list[Any], list[Any]]:
    row = reports.get_report(conn, project_id, week_number)
    if row is None:
        return None, [], []
    wanted = list(dict.fromkeys((row.get("citations") or {}).values()))
    return (row, desk_views.entries_by_id(conn, project_id, week_number, wanted),
            desk.signature_rows(conn, project_id, week_number))


def week_page(settings: Settings, project_id: str, week: IsoWeek) -> WeekPage | None:
    """The week's report with its sentences, the entries they cite (by id, only those), reasons and signatures."""
    row, entries, sigs = read(settings, _week_read, project_id, week.number)
    if row is None:
        return None
    citations = dict(row.get("citations") or {})
    sentences, other = _sentences(row["summary"], citations, list(row.get("review_reasons") or []))
    short = {entry: sid for sid, entry in citations.items()}
    stats = dict(row.get("stats") or {})
    lang = language_of_text([row["summary"]])
    return WeekPage(project_id, str(week), week.number, row["version"], row["status"], row["model"], bool(row["stale"]),
                    bool(row["needs_review"]), row["summary"], sentences, other, stats, entries,
                    short, [SignatureView(s.signer, s.printed_name, s.meaning, s.signed_at, s.version,
                                          s.version == row["version"]) for s in sigs],
                    row.get("flow_run_id"), row.get("reviewed_by"), row.get("updated_at"),
                    stats_rows=stats_rows(stats, lang),
                    type_names={e.type: type_label(e.type, lang) for e in entries})


# --- history -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VersionRow:
    version: int
    status: str
    author: str
    reason: str | None
    created_at: datetime
    needs_review: bool
    summary: str
    signed: tuple[str, ...] = ()
    """Its signatures as "meaning by Printed Name, YYYY-MM-DD HH:MM UTC": a signature clears the flag the version was
    stored with, so the history shows it beside that flag rather than the flag alone."""


@dataclass(frozen=True)
class History:
    versions: list[VersionRow]
    left: int | None
    right: int | None
    diff: list[str]


def _history_read(conn: Any, project_id: str, week_number: int) -> tuple[list[Any], list[Any]]:
    return reports.history(conn, project_id, week_number), desk.signature_rows(conn, project_id, week_number)


def _who_why(row: dict[str, Any]) -> tuple[str, str | None]:
    """Who wrote a version and why, as a reviewer reads them: an engine's version names the engine and says what
    made it write (the run's cache decision, "no report yet", describes the state before it)."""
    if row["status"] != "generated":
        return row["author"], row["reason"]
    return engine_label(row["model"]), why_written(row["reason"], row["model"]) if row["reason"] else None


def history(settings: Settings, project_id: str, week: IsoWeek, left: int | None = None,
            right: int | None = None) -> History:
    """Every version of a week, and the diff between two of them (default: the last two)."""
    rows, signed = read(settings, _history_read, project_id, week.number)
    versions = [VersionRow(r["version"], r["status"], *_who_why(r), r["created_at"],
                           bool(r["needs_review"]), r["summary"],
                           tuple(f"{s.meaning} by {s.printed_name}, {s.signed_at:%Y-%m-%d %H:%M} UTC"
                                 for s in signed if s.version == r["version"])) for r in rows]
    by = {v.version: v for v in versions}
    if right not in by:
        right = versions[-1].version if versions else None
    if left not in by:
        left = versions[-2].version if len(versions) > 1 else right
    diff = [] if left is None or right is None else diff_lines(
        by[left].summary, by[right].summary, old_label=f"version {left}", new_label=f"version {right}")
    return History(versions, left, right, diff)


# --- the review queue ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueItem:
    project_id: str
    week: str
    week_number: int
    status: str
    version: int
    flagged: bool
    stale: bool
    reasons: list[str]


def review_queue(settings: Settings, project_ids: list[str]) -> list[QueueItem]:
    """Flagged and stale weeks of the visible projects, oldest week first, each with its reasons as lines."""
    return [QueueItem(r.project_id, str(IsoWeek.from_number(r.week_number)), r.week_number, r.status, r.version,
                      r.needs_review, r.stale,
                      [describe(x) for x in r.reasons] + (["inputs changed since this text was written"]
                                                          if r.stale else []))
            for r in read(settings, desk_views.review_queue, project_ids)]


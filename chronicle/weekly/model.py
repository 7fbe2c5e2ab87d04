"""Plain records of the weekly chronicle: one week's input, the report written for it, what is stored."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from chronicle.redaction.pseudonyms import Pseudonyms
from chronicle.redaction.redactor import Redactor, split_secret_markers
from chronicle.weekly.stats import week_stats
from chronicle.weeks import IsoWeek

OFFLINE_MODEL = "offline-extractive"
EMPTY_MODEL = "none"
"""`model` of a zero-entry week: no engine wrote it, so configuring an endpoint does not redo it."""


@dataclass(frozen=True)
class WeekEntry:
    """One raw-log entry as the weekly engines see it; `short_id` (E1, E2, ...) is what reports cite."""

    short_id: str
    entry_id: str
    when: str  # project-local "MM-DD HH:MM", for prompts and extractive text
    actor: str | None
    type: str
    content: str


@dataclass(frozen=True)
class WeekInput:
    """Everything needed to write one project-week, read in one short DuckDB window."""

    project_id: str
    week: IsoWeek
    entries: tuple[WeekEntry, ...]
    stats: dict[str, Any]
    input_hash: str

    @property
    def citation_map(self) -> dict[str, str]:
        return {e.short_id: e.entry_id for e in self.entries}

    @property
    def entry_count(self) -> int:
        return len(self.entries)


@dataclass(frozen=True)
class WeekDigest:
    """What the cache decision and a kept report's stats refresh need: the week's input hash, stats and size.

    Without the redacted entries: a cached week of a rerun is never shown to anyone, and redacting and dating
    every entry of every week was most of a cached backfill's planning."""

    input_hash: str
    stats: dict[str, Any]
    entry_count: int


def input_hash(rows: Sequence[Mapping[str, Any]]) -> str:
    """sha256 of the ordered (entry_id, content) pairs: a late or changed entry changes it."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(str(row["entry_id"]).encode())
        digest.update(b"\x1f")
        digest.update(str(row["content"]).encode("utf-8"))
        digest.update(b"\x1e")
    return digest.hexdigest()


def _local(ts: datetime, tz: ZoneInfo) -> str:
    aware = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts
    return aware.astimezone(tz).strftime("%m-%d %H:%M")


def _shown_actor(row: Mapping[str, Any], redactor: Redactor) -> Any:
    return redactor.redact(str(row["actor"])) if row.get("actor") else row.get("actor")


def week_digest(rows: Sequence[Mapping[str, Any]], enrolled_before: int, redactor: Redactor) -> WeekDigest:
    """The `WeekDigest` of raw_logs rows: the same hash and stats as `make_week_input` gives (the stats read
    only the type and the redacted actor of each entry)."""
    shown = [{"type": r["type"], "actor": _shown_actor(r, redactor)} for r in rows]
    return WeekDigest(input_hash(rows), week_stats(shown, enrolled_before), len(rows))


def make_week_input(project_id: str, week: IsoWeek, rows: Sequence[Mapping[str, Any]], enrolled_before: int,
                    tz: ZoneInfo, redactor: Redactor, digest: WeekDigest | None = None,
                    pseudonyms: Pseudonyms | None = None) -> WeekInput:
    """Build a `WeekInput` from raw_logs rows already ordered by (ts, entry_id).

    Short ids follow that order, so the same week always maps E7 to the same entry and the
    mapping can be rebuilt later (e.g. to resolve citations of a human edit).

    Content and actor are redacted first with `redactor` (the caller's settings: built-in patterns plus
    `redact_extra_patterns`), like the notes before distillation: no secret or personal identifier reaches
    a prompt, a report or its stats. `input_hash` stays that of the rows as stored. `digest`, the rows'
    `week_digest` when the caller has it, saves computing the hash and stats again. `pseudonyms`, the project's
    mapping, replaces subjects' names, ids, phones, passports and addresses by their placeholders first (it
    records the ones it numbers for the first time; the caller stores them).
    """
    # Subjects' personal data first (stable placeholders, `pseudonyms`), then every secret.
    texts = [pseudonyms.apply(str(r["content"])) if pseudonyms else str(r["content"]) for r in rows]
    split = split_secret_markers(redactor, ((i, r.get("source_file"), r.get("line_no"), texts[i])
                                            for i, r in enumerate(rows)))
    shown = [{**r, "content": split.get(i) or redactor.redact(texts[i]), "actor": _shown_actor(r, redactor)}
             for i, r in enumerate(rows)]
    entries = tuple(
        WeekEntry(f"E{i}", str(r["entry_id"]), _local(r["ts"], tz), r["actor"], str(r["type"]), r["content"])
        for i, r in enumerate(shown, start=1)
    )
    if digest is None:
        digest = WeekDigest(input_hash(rows), week_stats(shown, enrolled_before), len(rows))
    return WeekInput(project_id, week, entries, digest.stats, digest.input_hash)


@dataclass(frozen=True)
class StoredReport:
    """The part of a stored `weekly_reports` row the cache decision and the writer need."""

    report_id: str
    status: str  # generated | edited
    model: str
    prompt_version: str
    input_hash: str
    stale: bool
    version: int
    summary: str
    stats: dict[str, Any]
    needs_review: bool = False
    review_reasons: list[dict[str, Any]] = field(default_factory=list)
    llm_stats: dict[str, Any] | None = None


@dataclass
class WeekReport:
    """A freshly written report for one week, ready to be stored."""

    project_id: str
    week: IsoWeek
    summary: str
    stats: dict[str, Any]
    citations: dict[str, str]
    model: str
    prompt_version: str
    input_hash: str
    entry_count: int
    engine: str  # offline | llm | empty
    needs_review: bool = False
    review_reasons: list[dict[str, Any]] = field(default_factory=list)
    llm_stats: dict[str, Any] | None = None
    llm_calls: int = 0

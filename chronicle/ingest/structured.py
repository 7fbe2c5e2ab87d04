"""Notes and LoCoMo files -> Entry objects (pure: bytes in, entries and rejects out)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from chronicle.ingest.detect import note_date
from chronicle.ingest.locomo import iter_turns
from chronicle.ingest.model import Entry, Reject, stable_id
from chronicle.ingest.notes import parse_note
from chronicle.weeks import local_week, to_utc


def _entry(project: str, source: str, file: str, line_no: int | None, ts_utc: datetime, tz: ZoneInfo,
           actor: str | None, type_: str, content: str, metadata: dict, key: tuple) -> Entry:
    day, week = local_week(ts_utc, tz)
    return Entry(entry_id=stable_id(project, source, file, *key),
                 project_id=project, source=source, source_file=file, line_no=line_no, byte_offset=None,
                 ts=ts_utc, local_date=day, iso_year=week.year, iso_week=week.week,
                 actor=actor, type=type_, content=content, metadata=metadata)


FUTURE_SLACK = timedelta(days=2)
"""How far ahead of now a dated entry may be (clock skew, zones ahead of UTC): the rule of log lines too
(`future_timestamp` in storage/ingest_sql.py)."""
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)


def plausibility(ts_utc: datetime, now: datetime | None = None) -> tuple[str, str] | None:
    """(reason, detail) when a timestamp cannot be a real entry's: far future or before 1970; None if plausible."""
    now = now or datetime.now(UTC)
    if ts_utc.tzinfo is None:  # naive means UTC here (chronicle.weeks.to_utc)
        ts_utc = ts_utc.replace(tzinfo=UTC)
    if ts_utc > now + FUTURE_SLACK:
        return "future_timestamp", f"{ts_utc:%Y-%m-%d} is after today ({now:%Y-%m-%d}) + {FUTURE_SLACK.days} days"
    if ts_utc < EARLIEST:
        return "implausible_timestamp", f"{ts_utc:%Y-%m-%d} is before 1970"
    return None


def note_entries(path: Path, text: str, project: str, tz: ZoneInfo, max_chars: int,
                 now: datetime | None = None) -> tuple[list[Entry], list[Reject]]:
    """One entry per bullet / paragraph of a daily note, dated by its file name at local midnight.

    A note dated in the far future or before 1970 (a typo in its name: `9999-01-01.md`) is refused whole, as
    a log line with that timestamp would be — one file name must not make a backfill plan ~415,000 weeks."""
    file = str(path)
    try:
        day = note_date(path)
    except ValueError as exc:
        return [], [Reject(file, None, None, "invalid_date", str(exc), text)]
    try:
        ts = to_utc(datetime(day.year, day.month, day.day), tz)
    except (OverflowError, ValueError) as exc:  # 9999-12-31 east of UTC: no such instant
        return [], [Reject(file, None, None, "future_timestamp", f"{day} cannot be placed in time: {exc}", text)]
    refused = plausibility(ts, now)
    if refused:
        return [], [Reject(file, None, None, refused[0], f"note named {path.name}: {refused[1]}", text)]
    entries, rejects = [], []
    seen: dict[tuple, int] = {}
    for block in parse_note(text):
        if len(block.text) > max_chars:
            rejects.append(Reject(file, block.line_no, None, "line_too_long",
                                  f"{len(block.text)} chars > {max_chars}", block.text))
            continue
        base = (" > ".join(block.heading_path), block.text)
        # Identical bullets under one heading are distinct entries, numbered by occurrence.
        seen[base] = seen.get(base, 0) + 1
        meta = {"heading_path": block.heading_path, "kind": block.kind, "note_date": day.isoformat()}
        if block.parent:
            meta["parent"] = block.parent
        entries.append(_entry(project, "note", file, block.line_no, ts, tz, None, "note", block.text, meta,
                              (*base, seen[base])))
    return entries, rejects


def locomo_entries(path: Path, text: str, project: str | None, tz: ZoneInfo) -> tuple[list[Entry], list[Reject]]:
    """Every LoCoMo dialogue turn as a `message`, one project per conversation (`locomo-conv-26`)."""
    file = str(path)
    try:
        data = json.loads(text)
        turns = list(iter_turns(data if isinstance(data, list) else [data]))
    except (ValueError, KeyError, TypeError) as exc:
        return [], [Reject(file, None, None, "invalid_locomo", f"{type(exc).__name__}: {exc}", text[:100_000])]
    entries = []
    for t in turns:
        proj = project or f"locomo-{t.sample_id}"
        meta = {"dia_id": t.dia_id, "session": t.session, "sample_id": t.sample_id, **t.extra}
        entries.append(_entry(proj, "locomo", file, t.index, to_utc(t.session_time, tz), tz, t.speaker,
                              "message", t.text, meta, (t.sample_id, t.dia_id, t.text)))
    return entries, []

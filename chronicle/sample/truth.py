"""The sample's ground truth: per-ISO-week counts recomputed from the written timestamps alone.

It reads only what lands in the files (`ts`, `type`, `actor`), never the generator's own dates, so the
pipeline's week bucketing is checked against an independent answer; naive timestamps mean project-local.
Weeks without events inside a project's span are listed with zero counts.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from chronicle.ingest.model import STANDARD_TYPES
from chronicle.sample.schedule import TZ


def week_number(ts: str, tz: ZoneInfo = TZ) -> int:
    """ISO week (`iso_year*100 + iso_week`) of an ISO 8601 timestamp; naive means project-local time."""
    dt = datetime.fromisoformat(ts)
    dt = dt.replace(tzinfo=tz) if dt.tzinfo is None else dt.astimezone(tz)
    year, week, _ = dt.isocalendar()
    return year * 100 + week


def _monday_of(week: int) -> date:
    return date.fromisocalendar(week // 100, week % 100, 1)


def project_truth(records: list[dict[str, object]]) -> dict[str, object]:
    """Per-week entry, type, enrolment and actor counts of one project's records (`ts`, `type`, `actor`)."""
    by_week: dict[int, list[dict[str, object]]] = {}
    for rec in records:
        by_week.setdefault(week_number(str(rec["ts"])), []).append(rec)
    first, last = min(by_week), max(by_week)
    weeks: dict[str, dict[str, object]] = {}
    cumulative, monday = 0, _monday_of(first)
    while monday <= _monday_of(last):
        y, wk, _ = monday.isocalendar()
        recs = by_week.get(y * 100 + wk, [])
        types = Counter(str(r["type"]) for r in recs)
        actors = Counter(str(r["actor"]) for r in recs)
        cumulative += types["enrollment"]
        row: dict[str, object] = {"entries": len(recs)} | {t: types[t] for t in STANDARD_TYPES}
        row |= {t: n for t, n in sorted(types.items()) if t not in STANDARD_TYPES}
        row |= {"enrolled": types["enrollment"], "enrolled_total": cumulative,
                "by_actor": dict(sorted(actors.items(), key=lambda kv: (-kv[1], kv[0])))}
        weeks[str(y * 100 + wk)] = row
        monday += timedelta(weeks=1)
    return {"weeks": weeks, "total_entries": len(records), "first_week": first, "last_week": last,
            "enrolled_total": cumulative}

"""The ISO week is computed by Python (chronicle/weeks.py) and, where SQL must, by DuckDB (the ingest's
`storage/ingest_sql.py`, migration 0004's `weekly_stats` view): they agree on every day of 1990-2040 in
zones on both sides of UTC, with half-hour and 45-minute offsets and daylight saving."""

from __future__ import annotations

import inspect
from datetime import date, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest

from chronicle.weeks import IsoWeek, local_week

FIRST, LAST = date(1990, 1, 1), date(2040, 12, 31)
ZONES = ["UTC", "Asia/Shanghai", "America/New_York", "Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Kathmandu",
         "Australia/Adelaide"]
# The ingest's expressions, word for word (the test below checks storage/ingest_sql.py still uses them).
LOCAL_TS = "timezone(tz, ts_tz) AS local_ts"
WEEK_COLUMNS = "CAST(local_ts AS DATE), isoyear(local_ts), week(local_ts), isoyear(local_ts) * 100 + week(local_ts)"
DAYS = f"unnest(generate_series(TIMESTAMP '{FIRST}', TIMESTAMP '{LAST}', INTERVAL 1 DAY)) AS g(d)"
VIEW_WEEK = "isoyear(s.start_date) * 100 + week(s.start_date)"


def test_the_ingest_still_computes_the_week_with_these_expressions() -> None:
    from chronicle.storage import ingest_sql

    source = " ".join(inspect.getsource(ingest_sql).split())  # the SQL may wrap anywhere
    assert LOCAL_TS in source and WEEK_COLUMNS in source, "the ingest's week SQL changed: update this test's copy"
    migration = next((Path(ingest_sql.__file__).parent / "migrations").glob("0004_*.sql")).read_text()
    assert VIEW_WEEK in migration and "date_trunc('week', first_day)" in migration


@pytest.mark.parametrize("zone", ZONES)
def test_ingest_sql_and_python_agree_on_every_day(zone: str) -> None:
    """Three instants a day (00:30, 11:00 and 23:30 UTC), so local dates fall on both sides of midnight."""
    with duckdb.connect() as conn:
        rows = conn.execute(f"""
            WITH i AS (SELECT ts, timezone('UTC', ts) AS ts_tz, $zone AS tz
                       FROM (SELECT d + t AS ts FROM {DAYS},
                                  unnest([INTERVAL 30 MINUTE, INTERVAL 11 HOUR, INTERVAL 1410 MINUTE]) AS h(t))),
                 l AS (SELECT ts, {LOCAL_TS} FROM i)
            SELECT ts, {WEEK_COLUMNS} FROM l ORDER BY ts""", {"zone": zone}).fetchall()
    tz = ZoneInfo(zone)
    assert len(rows) == 3 * ((LAST - FIRST).days + 1)
    wrong = []
    for ts, local_date, iso_year, iso_week, week_number in rows:
        day, week = local_week(ts, tz)
        if (local_date, iso_year, iso_week, week_number) != (day, week.year, week.week, week.number):
            wrong.append((ts, zone, (local_date, iso_year, iso_week, week_number), (day, week)))
    assert not wrong, f"{len(wrong)} instants disagree, e.g. {wrong[:3]}"


def test_the_weekly_stats_view_agrees_with_python_on_every_day(settings) -> None:
    """One entry a day from 1990 to 2040 in a database made by the real migrations: one view row per Python
    week, with the week's number, Monday, Sunday and entry count (the last week is partial)."""
    from chronicle.storage.db import connect, transaction

    days = [FIRST + timedelta(days=i) for i in range((LAST - FIRST).days + 1)]
    per_week: dict[IsoWeek, int] = {}
    for day in days:
        per_week[IsoWeek.of(day)] = per_week.get(IsoWeek.of(day), 0) + 1
    with transaction(settings) as conn:  # the rows' weeks as the ingest computes them (proven above)
        conn.execute(f"""
            INSERT INTO raw_logs (entry_id, project_id, source, source_file, ts, local_date, iso_year, iso_week,
                                  week_number, type, content)
            SELECT CAST(d AS VARCHAR), 'P', 'jsonl', 'f', d, CAST(d AS DATE), isoyear(d), week(d),
                   isoyear(d) * 100 + week(d), 'message', 'x'
            FROM {DAYS}""")
    with connect(settings, read_only=True) as conn:
        rows = conn.execute("SELECT week_number, iso_year, iso_week, start_date, end_date, entries "
                            "FROM weekly_stats WHERE project_id = 'P' ORDER BY start_date").fetchall()
    expected = [(w.number, w.year, w.week, w.start_date, w.end_date, n) for w, n in sorted(per_week.items())]
    assert rows == expected

"""ISO week rules in the project's local time."""

from __future__ import annotations

import os
import time
from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from chronicle.weeks import IsoWeek, last_completed_week, local_week, to_utc, week_range

SH = ZoneInfo("Asia/Shanghai")


def week_of(text: str, tz: ZoneInfo = SH) -> int:
    return local_week(to_utc(datetime.fromisoformat(text), tz), tz)[1].number


@pytest.mark.parametrize(
    ("ts", "week"),
    [
        ("2026-01-04T23:30:00+08:00", 202601),  # Sunday night in Shanghai: still week 1
        ("2026-01-04T16:30:00Z", 202602),  # = Monday 00:30 in Shanghai
        ("2026-01-04T23:30:00", 202601),  # naive = project local time
        ("2025-12-29T09:00:00+08:00", 202601),  # Monday of ISO 2026-W01 lies in December
        ("2025-12-28T09:00:00+08:00", 202552),
        ("2020-12-31T12:00:00+08:00", 202053),  # 2020 has a W53
        ("2021-01-03T12:00:00+08:00", 202053),
    ],
)
def test_iso_week_in_project_time(ts: str, week: int) -> None:
    assert week_of(ts) == week


def test_week_never_depends_on_machine_timezone(monkeypatch: pytest.MonkeyPatch) -> None:
    for machine_tz in ("UTC", "America/Los_Angeles", "Pacific/Kiritimati"):
        monkeypatch.setenv("TZ", machine_tz)
        time.tzset()
        assert week_of("2026-01-04T16:30:00Z") == 202602
        assert week_of("2026-01-04T23:30:00") == 202601
    monkeypatch.delenv("TZ")
    time.tzset()
    assert os.environ.get("TZ") is None


def test_other_project_timezone() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    assert week_of("2026-01-04T23:30:00+00:00", berlin) == 202602  # 00:30 Monday in Berlin
    assert week_of("2026-01-04T16:30:00Z", berlin) == 202601


def test_parse_and_format() -> None:
    for text in ("2026-W05", "2026W05", "202605", "2026-05", 202605):
        assert IsoWeek.parse(text) == IsoWeek(2026, 5)
    assert str(IsoWeek(2026, 5)) == "2026-W05"
    assert IsoWeek(2020, 53).number == 202053
    with pytest.raises(ValueError, match="does not exist"):
        IsoWeek.parse("2021-W53")
    with pytest.raises(ValueError, match="not an ISO week"):
        IsoWeek.parse("last week")


def test_dates_and_ranges() -> None:
    w = IsoWeek(2026, 1)
    assert (w.start_date, w.end_date) == (date(2025, 12, 29), date(2026, 1, 4))
    assert w.shift(-1) == IsoWeek(2025, 52)
    assert [x.number for x in week_range(IsoWeek(2020, 52), IsoWeek(2021, 2))] == [202052, 202053, 202101, 202102]
    with pytest.raises(ValueError):
        week_range(IsoWeek(2026, 2), IsoWeek(2026, 1))


def test_last_completed_week_uses_project_time() -> None:
    # Sunday 18:30 UTC is already Monday 02:30 in Shanghai: the week just completed is W01.
    assert last_completed_week(datetime.fromisoformat("2026-01-04T18:30:00+00:00"), SH) == IsoWeek(2026, 1)
    assert last_completed_week(datetime.fromisoformat("2026-01-04T18:30:00+00:00"), ZoneInfo("UTC")) == IsoWeek(
        2025, 52
    )

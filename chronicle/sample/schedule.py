"""The sample's calendar: period, holidays, working hours and the visit schedule.

Every date the generator uses is fixed here, so the period (2025-03 to 2026-05, crossing the
2025-W52/2026-W01 boundary) and the quiet weeks are easy to find and reason about. No randomness here.
"""

from __future__ import annotations

from datetime import date, timedelta
from zoneinfo import ZoneInfo

TIMEZONE = "Asia/Shanghai"
TZ = ZoneInfo(TIMEZONE)

FIRST_START = date(2025, 3, 3)  # a Monday; 56 weeks from here cross the 2025-W52/2026-W01 boundary
STAGGER_WEEKS = 4
PERIOD_END = date(2026, 6, 1)  # exclusive
# Chinese public holidays inside the period: activity drops and nobody enrols.
HOLIDAYS: tuple[tuple[date, date], ...] = (
    (date(2025, 5, 1), date(2025, 5, 5)),
    (date(2025, 10, 1), date(2025, 10, 8)),
    (date(2026, 1, 1), date(2026, 1, 3)),
    (date(2026, 2, 15), date(2026, 2, 23)),
)
# The second project's team is entirely off over Spring Festival: one week with zero events on purpose.
SILENT_DAY = date(2026, 2, 18)

HOURS = tuple(range(8, 23))
HOUR_WEIGHTS = (4, 12, 12, 10, 5, 6, 12, 12, 10, 7, 3, 2, 2, 1, 1)
DAY_WEIGHTS = (20, 20, 20, 20, 18, 3, 2)
# Visit schedule (weeks after randomisation): 21-day cycles, end of treatment, follow-up.
VISITS = {3 * c: f"C{c + 1}D1" for c in range(7)} | {20: "治疗结束访视", 26: "随访 1", 32: "随访 2"}


def is_holiday(d: date) -> bool:
    return any(lo <= d <= hi for lo, hi in HOLIDAYS)


def activity(monday: date) -> float:
    """Share of a normal week's activity: each holiday weekday takes 17 % off."""
    off = sum(is_holiday(monday + timedelta(i)) for i in range(5))
    return 1.0 - 0.17 * off

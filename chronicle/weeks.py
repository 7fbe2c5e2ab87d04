"""ISO weeks in a project's local time — pure functions, no machine timezone anywhere."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

_WEEK_RE = re.compile(r"^\s*+(\d{4})\s*+-?\s*+[Ww]?\s*+(\d{1,2})\s*+$")


@dataclass(frozen=True, order=True)
class IsoWeek:
    """One ISO 8601 week. Orders chronologically; `number` is seed 000's YYYYWW integer."""

    year: int
    week: int

    def __post_init__(self) -> None:
        # date.fromisocalendar rejects W53 in years that have only 52 weeks.
        date.fromisocalendar(self.year, self.week, 1)

    @classmethod
    def parse(cls, text: str | int) -> IsoWeek:
        """Accept `2026-W05`, `2026W05`, `2026-05` and `202605`."""
        raw = str(text)
        match = _WEEK_RE.match(raw)
        if not match:
            raise ValueError(f"not an ISO week: {raw!r} (expected YYYY-Www, e.g. 2026-W05)")
        try:
            return cls(int(match.group(1)), int(match.group(2)))
        except ValueError as exc:
            raise ValueError(f"week {raw!r} does not exist: {exc}") from exc

    @classmethod
    def of(cls, day: date) -> IsoWeek:
        iso = day.isocalendar()
        return cls(iso.year, iso.week)

    @classmethod
    def from_number(cls, number: int) -> IsoWeek:
        return cls(number // 100, number % 100)

    @property
    def number(self) -> int:
        return self.year * 100 + self.week

    @property
    def start_date(self) -> date:
        return date.fromisocalendar(self.year, self.week, 1)

    @property
    def end_date(self) -> date:
        return date.fromisocalendar(self.year, self.week, 7)

    def shift(self, weeks: int) -> IsoWeek:
        return IsoWeek.of(self.start_date + timedelta(weeks=weeks))

    def __str__(self) -> str:
        return f"{self.year}-W{self.week:02d}"


def week_range(start: IsoWeek, end: IsoWeek) -> list[IsoWeek]:
    """Every week from `start` to `end`, both included."""
    if end < start:
        raise ValueError(f"week range is backwards: {start}..{end}")
    out, cur = [], start
    while cur <= end:
        out.append(cur)
        cur = cur.shift(1)
    return out


def utc(ts: datetime) -> datetime:
    """Aware UTC; naive datetimes are taken to be UTC already (that is how Chronicle stores timestamps)."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def utc_now() -> datetime:
    """Now in UTC, naive (as every timestamp column of the database holds it)."""
    return datetime.now(UTC).replace(tzinfo=None)


def to_utc(ts: datetime, tz: ZoneInfo) -> datetime:
    """Naive timestamps are the project's local time; aware ones keep their offset. Result is naive UTC."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=tz)
    return ts.astimezone(UTC).replace(tzinfo=None)


def local_week(ts_utc: datetime, tz: ZoneInfo) -> tuple[date, IsoWeek]:
    """(local date, ISO week) of a naive-UTC instant as seen in `tz`."""
    local = ts_utc.replace(tzinfo=UTC).astimezone(tz)
    return local.date(), IsoWeek.of(local.date())


def last_completed_week(now: datetime, tz: ZoneInfo) -> IsoWeek:
    """The ISO week before the one `now` falls in, in `tz` (the Monday-02:00 job summarises it)."""
    aware = now if now.tzinfo else now.replace(tzinfo=UTC)
    return IsoWeek.of(aware.astimezone(tz).date()).shift(-1)

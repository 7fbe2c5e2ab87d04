"""One project's stream of log events: seeded moments in working hours, three `ts` spellings, no twins.

`EventStream` is the only place events are created, so the invariants every event obeys live in one
spot: times fall in plausible working hours of the given ISO week, `ts` is spelled with an offset, in
UTC (`Z`) or naive (= project-local), and no two events share instant and content (the pipeline
derives entry ids from those, so such a pair would merge into one entry).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from chronicle.sample.schedule import DAY_WEIGHTS, HOUR_WEIGHTS, HOURS, TZ, is_holiday


@dataclass
class Event:
    at: datetime  # aware, Asia/Shanghai
    style: str  # offset | utc | naive: how `ts` is spelled
    actor: str
    type: str
    content: str
    extra: dict[str, object]

    @property
    def ts(self) -> str:
        if self.style == "utc":
            return self.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.style == "naive":
            return self.at.replace(tzinfo=None).isoformat(timespec="seconds")
        return self.at.isoformat(timespec="seconds")


class EventStream:
    """Seeded event list; every draw comes from `rng`, so call order is part of the output."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.events: list[Event] = []
        self._seen: set[tuple[datetime, str]] = set()

    def when(self, monday: date, day: int | None = None) -> datetime:
        """A working-hours moment in the week of `monday`; holidays and weekends are rarely picked."""
        rng = self.rng
        if day is None:
            weights = [1 if is_holiday(monday + timedelta(i)) else w for i, w in enumerate(DAY_WEIGHTS)]
            day = rng.choices(range(7), weights)[0]
        d = monday + timedelta(days=day)
        hour = rng.choices(HOURS, HOUR_WEIGHTS)[0]
        second = rng.randrange(60) if rng.random() < 0.4 else 0
        return datetime(d.year, d.month, d.day, hour, rng.randrange(60), second, tzinfo=TZ)

    def add(self, monday: date, actor: str, type_: str, content: str, *, at: datetime | None = None,
            style: str | None = None, **extra: object) -> datetime:
        """Append one event (at `at`, or a fresh moment in the week) and return its time."""
        if style is None:
            r = self.rng.random()
            style = "utc" if r < 0.1 else "naive" if r < 0.2 else "offset"
        when = at or self.when(monday)
        # A content-derived entry id would merge two equal lines at the same instant: never emit those.
        while (when.astimezone(UTC), content) in self._seen:
            when = self.when(monday)
        self._seen.add((when.astimezone(UTC), content))
        self.events.append(Event(when, style, actor, type_, content, dict(extra)))
        return when

    def after(self, at: datetime, max_hours: int) -> datetime:
        """A moment after `at` within the same ISO week, for replies that must follow their cause."""
        later = at + timedelta(minutes=self.rng.randint(10, 60 * max_hours))
        week_end = datetime.combine(at.date() + timedelta(days=6 - at.weekday()), time(23, 0), TZ)
        return later if later <= week_end else at + timedelta(minutes=self.rng.randint(1, 25))

"""One simulated trial, week by week: the plan of the study and the order in which a week unfolds.

A `Trial` holds the state that carries over between weeks (team, enrolled subjects, open queries, the
milestone weeks of the story) and calls, for each week, the activity modules in a fixed order:
`oversight` (PI decisions, deviations, queries, monitoring), `clinic` (enrolment, visits) and `safety`
(SAEs), then the team's chat and the Sunday edge events defined here. Every draw comes from the
trial's own seeded `rng`, so that order is part of the output: reordering two calls changes every file.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from typing import Any

from chronicle.sample import clinic, oversight, safety
from chronicle.sample import text as txt
from chronicle.sample.schedule import FIRST_START, SILENT_DAY, STAGGER_WEEKS, TZ, activity
from chronicle.sample.stream import Event, EventStream
from chronicle.sample.team import Site, Subject, build_team


class Trial(EventStream):
    """One project's event stream, week by week."""

    def __init__(self, project: str, index: int, weeks: int, seed: int) -> None:
        # Per-project streams keep one project's data stable when another project is added.
        super().__init__(random.Random(f"{seed}:{project}"))
        self.project, self.index, self.weeks = project, index, weeks
        self.start = FIRST_START + timedelta(weeks=STAGGER_WEEKS * index)
        self.title = txt.TRIAL_TITLES[index % len(txt.TRIAL_TITLES)].format(p=project)
        self.team = build_team(self.rng, index)
        self.subjects: list[Subject] = []
        self.seq = dict.fromkeys((s.code for s in self.team.sites), 0)  # subject numbers per site
        self.open_queries: list[dict[str, Any]] = []
        self.query_seq = 0
        # The story's milestone weeks: protocol amendment, a site paused and resumed, enrolment closed.
        w = weeks
        self.amend_submit = max(3, round(w * 0.3))
        self.amend_ok = self.amend_submit + 3
        self.pause, self.resume = self.amend_ok + 4, self.amend_ok + 8
        self.close = max(4, round(w * 0.8))
        self.peak = self.rng.uniform(2.4, 3.4)  # enrolments per week at the plateau
        silent = SILENT_DAY - timedelta(days=SILENT_DAY.weekday())
        self.silent_week = (silent - self.start).days // 7 if index == 1 else -1

    def at_site(self, site: Site) -> list[Subject]:
        return [s for s in self.subjects if s.site is site]

    def run(self) -> list[Event]:
        for w in range(self.weeks):
            if w != self.silent_week:
                self._week(w)
        self.events.sort(key=lambda e: e.at)  # stable: equal instants keep generation order
        return self.events

    def _week(self, w: int) -> None:
        monday = self.start + timedelta(weeks=w)
        factor = activity(monday)
        before = len(self.events)
        for i, site in enumerate(self.team.sites):
            if i // 2 == w:
                self.add(monday, site.cra, "monitoring", txt.SIV_TEMPLATE.format(site=site.name))
        if w == 0:
            welcome = f"{self.project} 项目群建好了，欢迎大家！研究题目：{self.title}"
            self.add(monday, self.team.pm, "message", welcome)
        oversight.decisions(self, w, monday)
        clinic.enrol(self, w, monday, factor)
        clinic.visits(self, w, monday, factor)
        safety.sae(self, w, monday)
        oversight.queries(self, w, monday, factor)
        oversight.monitoring(self, w, monday)
        self._chat(monday, factor, len(self.events) - before)
        self._edges(w, monday)

    def _chat(self, monday: date, factor: float, so_far: int) -> None:
        """Small talk and work chatter: the noise the weekly summary must see through."""
        rng = self.rng
        n_chat, n_work = round(rng.randint(6, 13) * factor), round(rng.randint(3, 7) * factor)
        # Quiet start-up weeks still get the chatter of a team setting up (two edge events follow).
        if factor == 1.0:
            n_chat += max(0, 13 - so_far - n_chat - n_work)
        for table, n in ((txt.CHITCHAT, n_chat), (txt.WORK_CHAT, n_work)):
            for _ in range(n):
                site, day = rng.choice(self.team.sites).name, rng.choice(txt.WEEKDAYS_CN[:5])
                content = rng.choice(table).format(site=site, n=rng.randint(2, 12), day=day)
                self.add(monday, rng.choice(self.team.everyone), "message", content)

    def _edges(self, w: int, monday: date) -> None:
        """Sunday 23:30 +08:00 stays in this ISO week; Sunday 16:30Z is Monday 00:30 local, the next one."""
        rng = self.rng
        sunday = monday + timedelta(days=6)
        subs = self.subjects
        site = rng.choice(self.team.sites)
        late = [t for t in txt.SUNDAY_LATE if subs or "{subj}" not in t]
        content = rng.choice(late).format(site=site.name, subj=rng.choice(subs).sid if subs else "")
        at = datetime(sunday.year, sunday.month, sunday.day, 23, 30, tzinfo=TZ)
        self.add(monday, site.crc, "message", content, at=at, style="offset")
        if w + 1 >= self.weeks or w + 1 == self.silent_week:
            return  # would create a week outside the project's range or break the silent week
        at = datetime(sunday.year, sunday.month, sunday.day, 16, 30, tzinfo=UTC).astimezone(TZ)
        self.add(monday, rng.choice((self.team.monitor, self.team.dm)), "message", rng.choice(txt.SUNDAY_UTC),
                 at=at, style="utc")

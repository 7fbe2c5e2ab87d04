"""Clinic work of a trial week: subjects enrolled and coming back for their scheduled visits.

Enrolment ramps up, plateaus at the trial's `peak` rate and stops at the close week; holidays stop it and
the paused site takes nobody. Each visit may bring an adverse event (`safety`) or a protocol deviation
(`oversight`), logged after the visit that revealed it.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from chronicle.sample import oversight, safety
from chronicle.sample import text as txt
from chronicle.sample.schedule import VISITS
from chronicle.sample.team import Subject

if TYPE_CHECKING:
    from chronicle.sample.trial import Trial


def enrol(trial: Trial, w: int, monday: date, factor: float) -> None:
    rng = trial.rng
    ramp_end = max(3, round(trial.weeks * 0.2))
    if w < 2 or w >= trial.close or factor < 0.6:
        return
    rate = trial.peak * min(1.0, (w - 1) / (ramp_end - 1), (trial.close - w) / 4)
    n = sum(rng.random() < rate / 8 for _ in range(8))
    paused = trial.team.sites[-1] if trial.pause <= w < trial.resume else None
    open_sites = [s for s in trial.team.sites if s is not paused]
    icf = "V3.0" if w > trial.amend_ok else "V2.0"
    for _ in range(n):
        site = rng.choice(open_sites)
        trial.seq[site.code] += 1
        subj = Subject(f"{trial.project}-{site.code}-{trial.seq[site.code]:03d}", site, w)
        trial.subjects.append(subj)
        arm = rng.choice(txt.ARMS)
        content = rng.choice(txt.ENROLL_TEMPLATES).format(subj=subj.sid, site=site.name, icf=icf, arm=arm)
        at = trial.add(monday, site.crc, "enrollment", content, site=site.name, subject_id=subj.sid)
        if rng.random() < 0.04:
            oversight.eligibility_deviation(trial, monday, subj, at)


def visits(trial: Trial, w: int, monday: date, factor: float) -> None:
    rng, logged = trial.rng, 0
    for subj in trial.subjects:
        visit = VISITS.get(w - subj.week)
        if visit is None or w == subj.week or rng.random() > 0.92 * factor or logged >= 24:
            continue
        logged += 1
        site, sid = subj.site, subj.sid
        items = "、".join(rng.sample(txt.VISIT_ITEMS, 2))
        content = rng.choice(txt.VISIT_TEMPLATES).format(subj=sid, visit=visit, items=items)
        at = trial.add(monday, site.crc, "visit", content, site=site.name, subject_id=sid, visit=visit)
        if rng.random() < 0.13:
            safety.visit_ae(trial, monday, subj, visit, at)
        if rng.random() < 0.04:
            oversight.visit_deviation(trial, monday, subj, visit, at)

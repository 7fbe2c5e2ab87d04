"""Safety events: adverse events found at visits, serious adverse events and the follow-up they trigger.

AE grades follow CTCAE v5.0 with realistic weights (mostly grade 1-2). An SAE is reported by the site's
CRC, followed up by the medical monitor and, half the time, answered by the PI with a dose reduction;
both follow-ups fall later in the same ISO week as the report.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from chronicle.sample import text as txt
from chronicle.sample.team import Subject

if TYPE_CHECKING:
    from chronicle.sample.trial import Trial


def visit_ae(trial: Trial, monday: date, subj: Subject, visit: str, at: datetime) -> None:
    """An adverse event noted at the visit logged at `at`."""
    rng, site = trial.rng, subj.site
    grade = rng.choices((1, 2, 3, 4), (55, 30, 13, 2))[0]
    term, rel = rng.choice(txt.AE_TERMS), rng.choice(txt.RELATEDNESS)
    action = rng.choice(txt.AE_ACTIONS[grade])
    content = rng.choice(txt.AE_TEMPLATES).format(
        subj=subj.sid, visit=visit, grade=grade, term=term, rel=rel, action=action)
    trial.add(monday, site.crc, "ae", content, at=trial.after(at, 6), site=site.name,
              subject_id=subj.sid, grade=grade, term=term, relatedness=rel)


def sae(trial: Trial, w: int, monday: date) -> None:
    """At most one SAE a week, likelier the more subjects are on treatment (up to 10 % at 25)."""
    rng = trial.rng
    treated = [s for s in trial.subjects if 0 <= w - s.week <= 20]
    if not treated or rng.random() > 0.1 * min(1.0, len(treated) / 25):
        return
    subj = rng.choice(treated)
    term, grade, hours = rng.choice(txt.SAE_TERMS), rng.choice((3, 3, 4)), rng.randint(2, 23)
    report = trial.when(monday)
    onset = (report - timedelta(hours=hours)).strftime("%m月%d日 %H:%M")
    content = rng.choice(txt.SAE_TEMPLATES).format(
        subj=subj.sid, term=term, grade=grade, onset=onset, hours=hours, crc=subj.site.crc)
    trial.add(monday, subj.site.crc, "sae", content, at=report, site=subj.site.name, subject_id=subj.sid,
              grade=grade, term=term, hospitalised=True, reported_within_h=hours)
    followup = rng.choice(txt.SAE_FOLLOWUPS).format(subj=subj.sid)
    trial.add(monday, trial.team.monitor, "message", followup, at=trial.after(report, 20))
    if rng.random() < 0.5:
        dose = rng.choice(txt.DOSE_LEVELS)
        content = txt.DECISION_DOSE.format(subj=subj.sid, grade=grade, term=term, dose=dose)
        trial.add(monday, subj.site.pi, "decision", content, at=trial.after(report, 48))

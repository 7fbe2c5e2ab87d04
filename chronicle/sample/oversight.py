"""Trial oversight: PI decisions, protocol deviations, EDC queries and monitoring visits.

The decisions carry the trial's story (see the milestone weeks in `trial.Trial`): a protocol amendment
is submitted and approved, one site keeps consenting on the superseded form, is paused and resumed, and
enrolment closes. Queries live across weeks: DM opens one, and each later week it may move one step
(the CRC answers, DM closes).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from chronicle.sample import text as txt
from chronicle.sample.schedule import VISITS
from chronicle.sample.team import Subject

if TYPE_CHECKING:
    from chronicle.sample.trial import Trial


def decisions(trial: Trial, w: int, monday: date) -> None:
    rng, site, pi = trial.rng, trial.team.sites[-1], trial.team.lead_pi
    beats = {
        trial.amend_submit: txt.DECISION_AMEND_SUBMIT.format(new="V3.0"),
        trial.amend_ok: txt.DECISION_AMEND_APPROVED.format(new="V3.0"),
        trial.pause: txt.DECISION_PAUSE.format(site=site.name),
        trial.resume: txt.DECISION_RESUME.format(site=site.name),
    }
    if w in beats:
        trial.add(monday, pi, "decision", beats[w])
    if w == trial.close:
        trial.add(monday, pi, "decision", txt.DECISION_CLOSE.format(n=len(trial.subjects)))
    if w in (trial.amend_ok + 2, trial.amend_ok + 3) and (subs := trial.at_site(site)):
        # The story behind the pause: a site kept consenting on the superseded form.
        subj = rng.choice(subs)
        content = rng.choice(txt.DEVIATION_TEMPLATES["知情同意版本错误"]).format(
            subj=subj.sid, old="V2.0", new="V3.0")
        trial.add(monday, site.crc, "deviation", content, site=site.name, subject_id=subj.sid,
                  deviation="知情同意版本错误")
    if w > 6 and rng.random() < 0.05:
        date_ = (trial.start + timedelta(weeks=trial.weeks + 6)).strftime("%Y年%m月%d日")
        content = rng.choice(txt.DECISION_MISC).format(date=date_, site=rng.choice(trial.team.sites).name)
        trial.add(monday, pi, "decision", content)


def eligibility_deviation(trial: Trial, monday: date, subj: Subject, enrolled_at: datetime) -> None:
    """A subject found, after enrolment, not to meet an inclusion/exclusion criterion."""
    crit = trial.rng.choice(txt.CRITERIA)
    content = txt.DEVIATION_TEMPLATES["入排标准违背"][0].format(subj=subj.sid, crit=crit)
    trial.add(monday, subj.site.crc, "deviation", content, at=trial.after(enrolled_at, 72),
              site=subj.site.name, subject_id=subj.sid, deviation="入排标准违背")


def visit_deviation(trial: Trial, monday: date, subj: Subject, visit: str, at: datetime) -> None:
    """A visit outside its window or a missed blood sample, noted after the visit logged at `at`."""
    rng = trial.rng
    kind = rng.choice(("访视超窗", "漏采血"))
    content = rng.choice(txt.DEVIATION_TEMPLATES[kind]).format(
        subj=subj.sid, visit=visit, n=rng.randint(1, 6), reason=rng.choice(txt.WINDOW_REASONS))
    trial.add(monday, subj.site.crc, "deviation", content, at=trial.after(at, 48), site=subj.site.name,
              subject_id=subj.sid, deviation=kind)


def queries(trial: Trial, w: int, monday: date, factor: float) -> None:
    rng, dm = trial.rng, trial.team.dm
    if trial.subjects:
        for _ in range(round(rng.randint(0, 3) * factor)):
            subj = rng.choice(trial.subjects)
            trial.query_seq += 1
            q = {"qid": f"Q-{trial.query_seq:04d}", "subj": subj.sid, "site": subj.site.name,
                 "crc": subj.site.crc, "field": rng.choice(txt.QUERY_FIELDS), "status": "open", "week": w}
            # The query is about the subject's latest visit (C1D1 is the randomisation visit).
            visit = VISITS[max(k for k in VISITS if k <= w - subj.week)]
            issue = rng.choice(txt.QUERY_ISSUES)
            content = rng.choice(txt.QUERY_OPEN).format(visit=visit, issue=issue, **q)
            _add_query(trial, monday, dm, content, q)
            trial.open_queries.append(q)
    # Queries from earlier weeks move on one step per week: the CRC answers, then DM closes.
    for q in [q for q in trial.open_queries if q["week"] < w]:
        if rng.random() > 0.5 * factor:
            continue
        if q["status"] == "open":
            q["status"] = "answered"
            _add_query(trial, monday, q["crc"], rng.choice(txt.QUERY_ANSWER).format(**q), q)
        else:
            q["status"] = "closed"
            trial.open_queries.remove(q)
            _add_query(trial, monday, dm, rng.choice(txt.QUERY_CLOSE).format(**q), q)


def _add_query(trial: Trial, monday: date, actor: str, content: str, q: dict[str, Any]) -> None:
    trial.add(monday, actor, "query", content, site=q["site"], subject_id=q["subj"], query_id=q["qid"],
              status=q["status"])


def monitoring(trial: Trial, w: int, monday: date) -> None:
    """Each site gets a routine monitoring visit every fifth week, staggered across sites."""
    rng = trial.rng
    for i, site in enumerate(trial.team.sites):
        if w >= 2 and (w + 2 * i) % 5 == 0:
            k = rng.randint(0, 3)
            issue = "无" if k == 0 else rng.choice(txt.MONITORING_ISSUES[:-1])
            template = rng.choice(txt.MONITORING_TEMPLATES)
            content = template.format(site=site.name, n=w // 5, k=k, issue=issue)
            trial.add(monday, site.cra, "monitoring", content, site=site.name)

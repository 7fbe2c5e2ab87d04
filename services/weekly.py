"""Use cases of the weekly chronicle: plan a project's weeks, own a week, run it, keep kept reports true.

Plan (one read window per project; every week decided here and nowhere else) -> own the week's cache key
(a lease, below) -> write it (no database held, the LLM through the gate) -> store it (short window,
group-committed with the other weeks in flight, ending the lease in the same commit). No Prefect tasks or
artifacts here: the task layer runs groups of weeks and publishes what they return.

**Owning a week.** The claim key is the week's cache key (`WeekJob.claim_key`), so a second run handed the
same week waits for the first and reuses its report, and a run with other inputs (a late entry) is not held
up. One kind of lease (`chronicle.storage.claims.Leases`), taken at one of two moments: a fan-out leases the
weeks it is about to write in bulk (`lease_weeks`: one round trip, one heartbeat), and a week it could not
lease (its key was busy, or its task runs in another process) takes its key when it runs (`week_lease`),
waiting while another run holds it. A won key whose previous claim ended after this run planned is not
trusted blindly: the week is planned again, and when the new plan keeps the report another run wrote, that
report answers the week.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, NamedTuple, TypeVar

from chronicle.redaction.configured import redactor_for
from chronicle.redaction.pseudonyms import Pseudonyms
from chronicle.services.llm_gate import held_calls, llm_call, llm_turn
from chronicle.settings import Settings
from chronicle.storage import claims, reports, week_inputs
from chronicle.storage import pseudonyms as pseudonym_store
from chronicle.storage.db import connect, transactions, write
from chronicle.storage.llm_log import write_calls
from chronicle.storage.reports import Queued, ReportWrite
from chronicle.weekly.engine import Decision, WeekJob, decide, engine_model, llm_week, offline_week, recheck
from chronicle.weekly.faithfulness import describe
from chronicle.weekly.grouping import MAX_WEEKS_PER_TASK
from chronicle.weekly.model import StoredReport, WeekDigest, WeekInput, WeekReport, make_week_input, week_digest
from chronicle.weekly.outcome import WeekOutcome
from chronicle.weeks import IsoWeek, last_completed_week, utc, week_range

CLOCK_SKEW_S = 120.0
"""Hosts' clocks may disagree by this much: a claim finished up to this long before a plan was read is
still taken to be possibly newer than the plan."""

REUSED_WHY = "written by a concurrent run"

COMMIT_EVERY = MAX_WEEKS_PER_TASK
"""Offline weeks of a group stored per commit at least (more when more threads run at once): a write window
(open, commit, checkpoint on close) costs about as much CPU as ten offline weeks, so a window per few weeks
would be most of an offline backfill's cost, while a kill loses at most one window's text (fast to redo)."""

WeekKey = tuple[str, int]
"""(project, week number)."""

T = TypeVar("T")


class WeekRun(NamedTuple):
    """What running one week produced: its outcome row, and the report when new text was stored."""

    outcome: WeekOutcome
    report: WeekReport | None


class Pending(NamedTuple):
    """A week written by a group, its report waiting for the group's commit (which ends its lease)."""

    job: WeekJob
    report: WeekReport
    queued: Queued
    seconds: float


# --- planning -------------------------------------------------------------------------------------
def read_week(settings: Settings, project_id: str, week: IsoWeek) -> tuple[WeekInput, StoredReport | None]:
    """One short read window: the week's entries, the enrolment before it, its stored report."""
    with connect(settings) as conn:
        rows = week_inputs.week_rows(conn, project_id, week.number, week.number).get(week.number, [])
        before = week_inputs.enrolled_before(conn, project_id, week.number)
        stored = reports.stored_reports(conn, project_id, week.number, week.number).get(week.number)
        known = pseudonym_store.load(conn, project_id)
    names = Pseudonyms(known, tuple(settings.redact.pseudonymise_families))
    week_input = make_week_input(project_id, week, rows, before, settings.tz_for(project_id), redactor_for(settings),
                                 pseudonyms=names)
    return _with_pseudonyms_stored(settings, project_id, names, lambda: read_week(settings, project_id, week),
                                   (week_input, stored))


def _with_pseudonyms_stored(settings: Settings, project_id: str, names: Pseudonyms, again: Callable[[], T],
                            result: T) -> T:
    """Store the placeholders numbered for the first time; when another run numbered the same value first
    (a race), build again from the stored mapping, so one value never has two placeholders."""
    if not names.new:
        return result

    def save(conn: Any) -> bool:
        pseudonym_store.save(conn, project_id, names.new)
        stored = pseudonym_store.load(conn, project_id)
        return all(stored.get(k) == v for k, v in names.new.items())

    return result if write(settings, save) else again()


def plan_week(settings: Settings, project_id: str, week: IsoWeek, *, force: bool = False,
              overwrite_edited: bool = False) -> WeekJob:
    """The job of one week asked for by name (planned as a backfill of that week alone would plan it)."""
    jobs = plan_project(settings, project_id, week, week, force=force, overwrite_edited=overwrite_edited,
                        only_missing=False).to_run
    if not jobs:
        raise LookupError(f"{project_id} {week}: outside the project's weeks with entries")
    return jobs[0]


@dataclass
class ProjectPlan:
    """Weeks of one project that need a task, and the outcome rows of those answered at planning."""

    project_id: str
    to_run: list[WeekJob] = field(default_factory=list)
    done: list[WeekOutcome] = field(default_factory=list)
    planned_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    """Taken before the plan's read: what was stored then is what the plan knows (see `lease_weeks`)."""

    @property
    def total(self) -> int:
        return len(self.to_run) + len(self.done)


def plan_project(settings: Settings, project_id: str, start: IsoWeek | None = None, end: IsoWeek | None = None, *,
                 force: bool = False, overwrite_edited: bool = False, only_missing: bool = True,
                 to_last_entry: bool = False) -> ProjectPlan:
    """Read a project's weeks in ONE window and decide each; kept reports get their stats refreshed.

    The range is clamped to start no earlier than the project's first entry (there is no gap to fill
    before a project began); without bounds it is the project's first..last week with entries.
    `to_last_entry` (a range, i.e. a backfill): it also ends no later than the last entry — an end week far
    ahead (a typo such as 2030-W01) must not pad the chronicle with empty pages up to this week. A single week
    asked for by name (the Monday job) still gets its empty page once it has ended; one that has not (this week
    or next, without entries) gets none.
    """
    plan = ProjectPlan(project_id)
    with connect(settings) as conn:
        bounds = _week_bounds(settings, conn, project_id, start, end, to_last_entry)
        if bounds is None:
            return plan
        first, last = bounds
        rows = week_inputs.week_rows(conn, project_id, first.number, last.number)
        running = week_inputs.enrolled_before(conn, project_id, first.number)
        stored = reports.stored_reports(conn, project_id, first.number, last.number)
        known = pseudonym_store.load(conn, project_id)
    names = Pseudonyms(known, tuple(settings.redact.pseudonymise_families))
    tz, model, redactor = settings.tz_for(project_id), engine_model(settings), redactor_for(settings)
    refreshes: list[_RowRefresh] = []
    for week in week_range(first, last):
        week_rows, before = rows.get(week.number, []), running
        # The digest decides; the entries are redacted only for a week that runs or whose kept text is re-checked.
        digest = week_digest(week_rows, before, redactor)
        running = digest.stats["enrolled_total"]
        kept = stored.get(week.number)
        decision = decide(kept, digest, model, force=force, overwrite_edited=overwrite_edited)
        week_input = partial(make_week_input, project_id, week, week_rows, before, tz, redactor, digest, names)
        if not only_missing or decision.action == "generate" or kept is None:
            plan.to_run.append(WeekJob(week_input(), kept, decision, overwrite_edited))
            continue
        outcome, refresh = _kept_week(project_id, week, kept, decision, digest, week_input)
        plan.done.append(outcome)
        refreshes += [refresh] if refresh is not None else []
    _store_refreshes(settings, project_id, refreshes)
    return _with_pseudonyms_stored(settings, project_id, names, lambda: plan_project(
        settings, project_id, start, end, force=force, overwrite_edited=overwrite_edited, only_missing=only_missing,
        to_last_entry=to_last_entry),
        plan)


def _week_bounds(settings: Settings, conn: Any, project_id: str, start: IsoWeek | None, end: IsoWeek | None,
                 to_last_entry: bool) -> tuple[IsoWeek, IsoWeek] | None:
    """The first and last week to plan (see plan_project), None when there is none."""
    span = week_inputs.week_span(conn, project_id)
    if span is None:
        return None
    first = max(start or IsoWeek.from_number(span[0]), IsoWeek.from_number(span[0]))
    # Never past this week: no entry can be later (ingest refuses future timestamps), and a stored one from
    # an older release (a note named 9999-01-01.md) must not make the plan ~415,000 weeks long.
    now, tz = datetime.now(UTC), settings.tz_for(project_id)
    latest = IsoWeek.of((now + timedelta(days=2)).astimezone(tz).date())
    # Past the last entry, only a week that has ended gets its empty page: a week asked for by name that has
    # not ended yet (this week, next week: a typo) would put "本周无记录" in the chronicle for days nobody lived.
    last = min(end or IsoWeek.from_number(span[1]), latest,
               max(IsoWeek.from_number(span[1]), last_completed_week(now, tz)))
    if to_last_entry:
        last = min(last, IsoWeek.from_number(span[1]))
    return None if last < first else (first, last)


_RowRefresh = tuple[int, dict, bool | None, list[dict] | None]
"""A kept report's row to refresh: week number, new stats, staleness (edited weeks), re-checked review reasons."""


def _kept_week(project_id: str, week: IsoWeek, kept: StoredReport, decision: Decision,
               digest: WeekDigest | WeekInput, week_input: Callable[[], WeekInput]
               ) -> tuple[WeekOutcome, _RowRefresh | None]:
    """The outcome of a week whose stored report stays, and its row's refresh when the week's stats or its
    staleness changed (a late enrolment shifts `enrolled_total` of later weeks)."""
    stale = decision.stale if decision.action == "skip-edited" else None
    needs_review, reasons, refresh = kept.needs_review, None, None
    if kept.stats != digest.stats or (stale is not None and stale != kept.stale):
        # New stats (e.g. a late enrolment earlier on) re-check the kept text; edits are not flagged.
        reasons = None if kept.status == "edited" else recheck(kept, week_input())
        needs_review = bool(reasons) if reasons is not None else needs_review
        refresh = (week.number, digest.stats, stale, reasons)
    shown = reasons if reasons is not None else kept.review_reasons
    outcome = WeekOutcome(project_id, week.number, decision.kept_as, kept.model, digest.entry_count,
                          needs_review=needs_review,
                          reasons=tuple(describe(r) for r in shown) if needs_review else (),
                          why=decision.why)
    return outcome, refresh


def _store_refreshes(settings: Settings, project_id: str, refreshes: list[_RowRefresh]) -> None:
    if not refreshes:
        return
    for attempt in transactions(settings, guard=reports.guard_keys([project_id])):
        with attempt as conn:  # a lake commit conflict re-runs the unit
            for number, stats, stale, reasons in refreshes:
                reports.refresh(conn, project_id, number, stats=stats, stale=stale, review_reasons=reasons)


# --- owning ---------------------------------------------------------------------------------------
def lease_weeks(settings: Settings, leases: claims.Leases, jobs: list[WeekJob], model: str, *,
                planned_at: datetime) -> dict[WeekKey, WeekOutcome]:
    """Lease the weeks that are to be written, in one round trip; returns the outcome rows of the weeks another
    run wrote since `planned_at` (their leases released: nothing to write). The rest (weeks not to be written,
    or whose key another run holds now) take theirs when they run (`week_lease`)."""
    wanted = {job.claim_key(model): job for job in jobs if job.decision.action == "generate"}
    taken = leases.take(wanted)
    since = utc(planned_at - timedelta(seconds=CLOCK_SKEW_S))
    won = [key for key, t in taken.items() if t.won]
    ended = [key for key in won if (end := taken[key].previous_end) is not None and utc(end) >= since]
    answered = _written_since_plan(settings, [wanted[key] for key in ended])
    leases.release([key for key in ended if (wanted[key].project_id, wanted[key].week.number) in answered])
    return answered


@contextmanager
def week_lease(settings: Settings, job: WeekJob, model: str) -> Iterator[claims.Lease | WeekOutcome]:
    """The lease a week to be written is written under, or the outcome when another run wrote it meanwhile.

    The fan-out's lease when it took the week; else the week's key is taken now (on the fan-out's leases, or,
    in a process without them, on leases of its own), waiting while another run (another backfill, another
    worker) writes it; a holder killed with -9 frees the key at once on the embedded file, `weekly.week_lease_s`
    later in the lake.
    """
    key = job.claim_key(model)
    fan_out = claims.Leases.of(job.lease_owner)
    if fan_out is not None and fan_out.holds(key):
        yield claims.Lease(fan_out, key)
        return
    own = nullcontext(fan_out) if fan_out is not None else claims.Leases(settings, ttl_s=settings.weekly.week_lease_s)
    with own as leases:
        taken = leases.acquire(key, settings.db_lock_timeout_s)
        row = (_written_since_plan(settings, [job]).get((job.project_id, job.week.number))
               if taken.previous_end is not None else None)
        if row is not None:
            leases.release([key])
            yield row
            return
        yield claims.Lease(leases, key)


def _written_since_plan(settings: Settings, jobs: list[WeekJob]) -> dict[WeekKey, WeekOutcome]:
    """The weeks of `jobs` another run wrote since they were planned, with their outcome rows.

    One read of the stored reports finds the weeks whose report moved on since this run's plan; only those are
    planned again (where every week is decided), and one is answered when the new plan keeps its report:
    current for the week's cache key (even for a forced week — it is written once per set of concurrent runs)
    or a human edit this run may not overwrite.
    """
    out: dict[WeekKey, WeekOutcome] = {}
    by_project: dict[str, list[WeekJob]] = {}
    for job in jobs:
        by_project.setdefault(job.project_id, []).append(job)
    for project_id, mine in by_project.items():
        numbers = [job.week.number for job in mine]
        with connect(settings) as conn:
            now = reports.stored_reports(conn, project_id, min(numbers), max(numbers))
        moved = {job.week.number for job in mine if (current := now.get(job.week.number)) is not None
                 and (job.stored is None or current.version != job.stored.version)}
        if not moved:
            continue
        again = plan_project(settings, project_id, IsoWeek.from_number(min(moved)), IsoWeek.from_number(max(moved)),
                             overwrite_edited=mine[0].overwrite_edited)
        out |= {(project_id, row.week_number): replace(row, why=REUSED_WHY)
                for row in again.done if row.week_number in moved}
    return out


# --- running --------------------------------------------------------------------------------------
def run_week(settings: Settings, job: WeekJob, run_id: str, *, hold: bool = False) -> WeekRun | Pending:
    """Run one planned week end to end: answer it from its stored report, or own it, write it and store it.

    `hold` (a group's offline week): the written report is returned as `Pending` for the group's commit instead
    of being stored at once — only when its lease is on the fan-out's leases, which outlive this call (leases
    of its own end with `week_lease`, before a later commit could end them).
    """
    t0 = time.perf_counter()
    if job.decision.action != "generate":
        assert job.stored is not None
        row, refresh = _kept_week(job.project_id, job.week, job.stored, job.decision, job.input, lambda: job.input)
        _store_refreshes(settings, job.project_id, [refresh] if refresh is not None else [])
        return WeekRun(row.timed(time.perf_counter() - t0), None)
    model = engine_model(settings)
    with week_lease(settings, job, model) as owned:
        if isinstance(owned, WeekOutcome):  # another run wrote the week while this one waited for its lease
            return WeekRun(owned.timed(time.perf_counter() - t0), None)
        try:
            # The week's successful LLM attempts are stored in its report's commit (one write window per
            # week); if the week fails before that commit, held_calls writes them on the way out.
            with held_calls(settings) as held:
                report = _write_text(settings, job, model, run_id)
                # `edit_seen`: the version of the human edit the run planned over, the only one
                # `overwrite_edited` may replace (an edit saved while the week runs is kept).
                seen = job.stored.version if job.stored is not None and job.stored.status == "edited" else None
                write = ReportWrite(report, job.overwrite_edited, job.decision.why, run_id, seen)
                queued = Queued(write, owned, held.take())
                if hold and owned.leases.owner == job.lease_owner:
                    held.done()  # stored with the group's commit (or written on their own if it fails)
                    return Pending(job, report, queued, time.perf_counter() - t0)
                (saved,) = reports.writer_for(settings).save_many([queued])
                if isinstance(saved, BaseException):
                    raise saved
                held.done()
        except BaseException:
            owned.release()
            raise
    row = _written(job, report, saved)
    return WeekRun(row.outcome.timed(time.perf_counter() - t0), row.report)


def _write_text(settings: Settings, job: WeekJob, model: str, run_id: str) -> WeekReport:
    """The week's text (offline engine, or the LLM through the gate); a failure marks a changed report stale."""
    week_input, stored = job.input, job.stored
    project_id, week = job.project_id, job.week
    try:
        if settings.llm.offline or not week_input.entries:
            return offline_week(week_input, settings.weekly.report_max_chars)
        call = llm_call(settings, run_id, project_id=project_id, week_number=week.number)
        return llm_week(week_input, call, model=model, max_chars=settings.weekly.report_max_chars,
                        context_tokens=settings.llm.context_tokens)
    except Exception:
        if stored is not None and stored.status == "generated" and stored.input_hash != week_input.input_hash:
            for attempt in transactions(settings, guard=reports.guard_keys([project_id])):
                with attempt as conn:
                    reports.mark_stale(conn, project_id, week.number)
        raise


def _written(job: WeekJob, report: WeekReport, saved: str) -> WeekRun:
    """What storing a week's new text produced (`saved`: the writer's outcome, e.g. generated or skipped-edited)."""
    row = WeekOutcome(job.project_id, job.week.number, saved, report.model, len(job.input.entries),
                      llm_calls=report.llm_calls, needs_review=report.needs_review,
                      reasons=tuple(describe(r) for r in report.review_reasons), why=job.decision.why)
    return WeekRun(row, report if saved == "generated" else None)


def run_week_group(settings: Settings, jobs: list[WeekJob], run_id: str, *,
                   threads: int = 1) -> list[WeekRun | Exception]:
    """Run a group of weeks (`threads` at a time), each through `run_week`; one result per week, in order, a
    week that fails being its exception while its neighbours go on.

    The weeks the offline engine writes under the fan-out's lease (milliseconds each, where a commit per week
    would cost more than the week) are stored one commit per round of weeks (`threads` of them, at least
    COMMIT_EVERY): a kill before that commit loses the round's text, never a week half stored, and the rerun
    writes it again. A week written by the LLM is stored as soon as it is written (group-committed with the
    weeks in flight beside it): held for the group's commit, a kill would throw away paid calls.
    """
    out: list[WeekRun | Exception | None] = [None] * len(jobs)
    pending: list[Pending | None] = [None] * len(jobs)
    started = time.monotonic()  # this group's turn at the LLM slots: an older group's weeks go first

    def one(i: int) -> None:
        job = jobs[i]
        hold = job.lease_owner is not None and (settings.llm.offline or not job.input.entries)
        try:
            with llm_turn((started, i)):
                result = run_week(settings, job, run_id, hold=hold)
        except Exception as exc:
            result = exc
        if isinstance(result, Pending):
            pending[i] = result
        else:
            out[i] = result

    n, step = len(jobs), max(threads, COMMIT_EVERY)
    with ThreadPoolExecutor(max_workers=min(threads, n), thread_name_prefix="chronicle-week") \
            if min(threads, n) > 1 else nullcontext() as pool:
        # No barrier between rounds: a thread that finished a week takes the next one at once, while a
        # neighbour waits for its report's commit — a round waiting for its slowest week and its write window
        # left the LLM slots idle. Each week runs in a copy of THIS thread's context, taken here at submit: its
        # Prefect task run and the fan-out's LLM slot reservation (a copy taken inside the pool thread would hold
        # neither, and a week would then wait forever for a slot its own run holds). `settle[i]()` waits for week i, or
        # with one thread runs it there.
        settle = ([pool.submit(contextvars.copy_context().run, one, i).result for i in range(n)] if pool
                     else [partial(one, i) for i in range(n)])
        for first in range(0, n, step):
            chunk = range(first, min(first + step, n))
            for i in chunk:
                settle[i]()
            _store_round(settings, pending, out, chunk)
    assert all(r is not None for r in out)
    return [r for r in out if r is not None]


def _store_round(settings: Settings, pending: list[Pending | None], out: list[WeekRun | Exception | None],
                 indices: range) -> None:
    """Store a round's written weeks in one commit (ending their leases); a week whose write failed gets its
    error in `out`, its lease released and its LLM attempts' rows written on their own."""
    todo = [(i, p) for i in indices if (p := pending[i]) is not None]
    t_save = time.perf_counter()
    saved = reports.writer_for(settings).save_many([p.queued for _, p in todo])
    share = (time.perf_counter() - t_save) / max(1, len(todo))  # each week's part of the one commit
    for (i, p), result in zip(todo, saved, strict=True):
        if isinstance(result, BaseException):
            assert p.queued.lease is not None
            p.queued.lease.release()
            write_calls(settings, p.queued.calls)
            out[i] = result if isinstance(result, Exception) else RuntimeError(str(result))
            continue
        run = _written(p.job, p.report, result)
        out[i] = WeekRun(run.outcome.timed(p.seconds + share), run.report)

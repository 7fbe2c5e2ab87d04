"""Week claims: a week's cache key is claimed before the model is called, so no two runs write it.

The key is the cache key itself (project, week, input hash, model, prompt version): a second run handed
the same week waits for the first and reuses its report; a run with other inputs (a late entry) is not
held up. Claims live where `chronicle.storage.claims` keeps them (the DuckDB file, or PostgreSQL in the lake).

One kind of lease (`chronicle.storage.claims.Leases`), taken at one of two moments:

* **A fan-out leases its weeks in bulk** (`lease_weeks`): one round trip for all the weeks it is about to
  write, one heartbeat renewing them all, and each lease ended in the same commit as its report (the
  report writer `finish`es it). Per-week claim windows would serialise a backfill on the embedded file lock.
* **A week that was not leased** (its key was busy, or its task runs in another process) takes its key when
  it runs (`week_lease`), on the same leases, waiting while another run holds it, then reuses that run's
  report if it answers the week. Either way the lease ends in the commit that stores the report.

After winning a key, a run must not trust its plan blindly: another run may have written the week since
the plan was read. A finished claim leaves its end time (`Taken.previous_end`); only when that is later
than this run's plan (less `CLOCK_SKEW_S`) is the stored report read again and, if it answers the week,
reused instead of written.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from chronicle.storage import claims, reports
from chronicle.storage.db import connect

from chronicle.settings import Settings
from chronicle.weekly.engine import WeekJob, decide, target_model
from chronicle.weekly.model import StoredReport, WeekInput
from chronicle.weekly.outcome import WeekOutcome
from chronicle.weekly.prompt import PROMPT_VERSION

WEEK_CLAIM_TTL_S = 30.0
"""Lease of a week being written; renewed every third of it while the writer lives (generous for the
embedded file lock, where a renewal may wait behind another process's write window)."""

CLOCK_SKEW_S = 120.0
"""Hosts' clocks may disagree by this much: a claim finished up to this long before a plan was read is
still taken to be possibly newer than the plan."""

REUSED_WHY = "written by a concurrent run"


def week_claim_key(week: WeekInput, engine_model: str) -> str:
    """The week's cache key as a claim key: project, week, input hash, model and prompt version."""
    return (f"week:{week.project_id}:{week.week.number}:{week.input_hash}:{target_model(week, engine_model)}:"
            f"{PROMPT_VERSION}")


def answer_from(current: StoredReport | None, job: WeekJob, model: str) -> WeekOutcome | None:
    """The outcome when the stored report (`current`) already answers a week this run planned to write.

    Only a report written after this run planned (its version moved on) can; it does when it is current
    for the week's cache key (even a forced week: it is written once per set of concurrent runs) or is a
    human edit this run may not overwrite.
    """
    planned, week = job.stored, job.input
    if current is None or (planned is not None and current.version == planned.version):
        return None
    again = decide(current, week, model, overwrite_edited=job.overwrite_edited)
    if again.action == "generate":
        return None
    return WeekOutcome(week.project_id, week.week.number, again.kept_as, current.model, len(week.entries),
                       needs_review=current.needs_review, why=REUSED_WHY)


@contextmanager
def week_lease(settings: Settings, job: WeekJob, model: str) -> Iterator[claims.Lease | WeekOutcome]:
    """The lease a week to be written is written under, or the outcome when another run wrote it meanwhile.

    The fan-out's lease when it took the week; else the week's key is taken now (on the fan-out's leases, or,
    in a process without them, on leases of its own), waiting while another run (another backfill, another
    worker) writes it; a holder killed with -9 frees the key at once on the embedded file, `WEEK_CLAIM_TTL_S`
    later in the lake. Once taken, the stored report is read again: the holder may have written the week.
    """
    key = week_claim_key(job.input, model)
    fan_out = leases_of(job.lease_owner)
    if fan_out is not None and fan_out.holds(key):
        yield claims.Lease(fan_out, key)
        return
    with nullcontext(fan_out) if fan_out is not None else claims.Leases(settings, ttl_s=WEEK_CLAIM_TTL_S) as leases:
        leases.acquire(key, settings.db_lock_timeout_s)
        row = written_meanwhile(settings, job, model)
        if row is not None:
            leases.release([key])
            yield row
            return
        yield claims.Lease(leases, key)


def written_meanwhile(settings: Settings, job: WeekJob, model: str) -> WeekOutcome | None:
    """`answer_from` the week's report as stored now (one short read)."""
    number = job.week.number
    with connect(settings) as conn:
        current = reports.stored_reports(conn, job.project_id, number, number).get(number)
    return answer_from(current, job, model)


# --- a fan-out's leases ------------------------------------------------------------------------
_registry: dict[str, claims.Leases] = {}
_registry_lock = threading.Lock()


@contextmanager
def fan_out_leases(settings: Settings) -> Iterator[claims.Leases]:
    """The week leases of one fan-out; its week tasks in this process find them by owner (`leases_of`)."""
    with claims.Leases(settings, ttl_s=WEEK_CLAIM_TTL_S) as leases:
        with _registry_lock:
            _registry[leases.owner] = leases
        try:
            yield leases
        finally:
            with _registry_lock:
                _registry.pop(leases.owner, None)


def leases_of(owner: str | None) -> claims.Leases | None:
    if owner is None:
        return None
    with _registry_lock:
        return _registry.get(owner)


WeekKey = tuple[str, int]
"""(project, week number)."""


@dataclass
class Leased:
    """What a fan-out's bulk lease gave: the weeks it holds, and the weeks another run wrote since the plan."""

    weeks: set[WeekKey] = field(default_factory=set)
    """Leased: write them under the fan-out's lease."""
    answered: dict[WeekKey, WeekOutcome] = field(default_factory=dict)
    """Written by another run since the plan: their outcome rows, nothing to write."""


def lease_weeks(settings: Settings, leases: claims.Leases, jobs: list[WeekJob], model: str, *,
                planned_at: datetime) -> Leased:
    """Lease the weeks that are to be written, in one round trip.

    The rest (weeks not to be written, or whose key another run holds now) take theirs when they run (`week_lease`).
    """
    wanted = {week_claim_key(job.input, model): job for job in jobs if job.decision.action == "generate"}
    taken = leases.take(wanted)
    since = (planned_at - timedelta(seconds=CLOCK_SKEW_S)).astimezone(UTC)
    won = [key for key, t in taken.items() if t.won]
    recheck = [key for key in won if taken[key].previous_end is not None and _utc(taken[key].previous_end) >= since]
    answered: dict[WeekKey, WeekOutcome] = {}
    if recheck:
        current = _stored_now(settings, [wanted[key].input for key in recheck])
        for key in recheck:
            job = wanted[key]
            row = answer_from(current.get((job.project_id, job.week.number)), job, model)
            if row is not None:
                answered[(job.project_id, job.week.number)] = row
                leases.release([key])
    leased = {(wanted[key].project_id, wanted[key].week.number) for key in won} - answered.keys()
    return Leased(leased, answered)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _stored_now(settings: Settings, weeks: list[WeekInput]) -> dict[tuple[str, int], StoredReport]:
    """The stored reports of these weeks, one query per project (one short read window)."""
    by_project: dict[str, list[int]] = {}
    for w in weeks:
        by_project.setdefault(w.project_id, []).append(w.week.number)
    out: dict[tuple[str, int], StoredReport] = {}
    with connect(settings) as conn:
        for project, numbers in by_project.items():
            for number, stored in reports.stored_reports(conn, project, min(numbers), max(numbers)).items():
                out[(project, number)] = stored
    return out

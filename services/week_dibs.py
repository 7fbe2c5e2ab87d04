"""A backfill spread over several flow runs (workers): who writes which week, and who is still alive.

The run the operator started (participant 0) plans the weeks and starts child runs (participants 1..n,
`tasks/fan_out/workers.py`). Every participant walks the SAME list of weeks, each from its own starting point,
and writes a week only if it takes the week's **dibs** first: a claim `spread:<batch>:<project>:<week>`
that is never released during the batch. So each week is written by exactly one participant, and the
work balances itself: a fast or early worker simply takes more weeks, a child that starts late finds
them taken and ends. Around that:

* `done` marks (one claim per finished week) give the operator's progress bar across all runs;
* an `alive` claim, renewed by a heartbeat, says a child is still working: a worker killed with -9
  stops renewing it, so the parent stops waiting for it and writes the weeks that have no outcome row
  itself (the week claim of `chronicle.services.weekly.run_week` keeps that from ever writing a week twice);
* the batch's claims expire on their own (hours later), so a child that starts after the end still finds
  every week taken; each parent deletes the expired claims of older batches.

Pure bookkeeping over `chronicle.storage.claims`: no Prefect here (the child runs are started by the task layer).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from chronicle.storage import claims, reports
from chronicle.storage.db import connect

from chronicle.settings import Settings

T = TypeVar("T")
BATCH_TTL_S = 6 * 3600.0
"""Dibs and done marks outlive any batch; the parent drops them at its end (a crashed parent's expire)."""

ALIVE_TTL_S = 15.0
"""A child's heartbeat claim: renewed every 5 s, gone 15 s after its process died."""

Weeks = dict[str, list[int]]
"""The weeks of a spread backfill: project -> ISO week numbers (a flow-run parameter, so plain JSON)."""


def owner(batch: str, participant: int) -> str:
    """Deterministic per participant: a retried run (same batch) may take its own dibs again."""
    return f"spread:{batch}:p{participant}"


def _dibs_prefix(batch: str) -> str:
    return f"spread:{batch}:week:"


def _dibs_key(batch: str, project: str, week: int) -> str:
    return f"{_dibs_prefix(batch)}{week}:{project}"


def _done_prefix(batch: str) -> str:
    return f"spread:{batch}:done:"


def _alive_key(batch: str, participant: int) -> str:
    return f"spread:{batch}:alive:{participant}"


def _started_key(batch: str, participant: int) -> str:
    return f"spread:{batch}:started:{participant}"


def rotated(items: Sequence[T], participant: int, participants: int) -> list[T]:
    """The order participant `i` of `n` walks the shared list: starting i/n of the way in, wrapping round,
    so that participants begin far apart and meet only at the end."""
    if not items or participants <= 1:
        return list(items)
    start = (participant * len(items)) // participants
    return [*items[start:], *items[:start]]


def take(settings: Settings, batch: str, participant: int, weeks: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """Take the dibs of these (project, week)s for this participant in one round trip; those it got."""
    keys = {_dibs_key(batch, project, week): (project, week) for project, week in weeks}
    taken = claims.take(settings, keys, owner(batch, participant), ttl_s=BATCH_TTL_S)
    return [keys[key] for key in keys if taken[key].won]


def mark_done(settings: Settings, batch: str, participant: int, weeks: Sequence[tuple[str, int]]) -> None:
    """Count these (project, week)s as finished (one round trip)."""
    claims.take(settings, [f"{_done_prefix(batch)}{week}:{project}" for project, week in weeks],
                owner(batch, participant), ttl_s=BATCH_TTL_S)


def taken_count(settings: Settings, batch: str) -> int:
    """Weeks of the batch some participant has the dibs of (taken, finished or not)."""
    return claims.count(settings, _dibs_prefix(batch))


def done_count(settings: Settings, batch: str) -> int:
    """Weeks of the batch finished by any participant so far."""
    return claims.count(settings, _done_prefix(batch))


@contextmanager
def alive(settings: Settings, batch: str, participant: int) -> Iterator[None]:
    """Say "participant is working" for the block (heartbeat-renewed; lapses when the process dies), and leave
    a `started` mark that outlives it: a child found not alive is then told apart as died (it had started: its
    run is Crashed and the weeks it wrote are its own) or not started yet (nothing of the batch is left to it)."""
    claims.take(settings, [_started_key(batch, participant)], owner(batch, participant), ttl_s=BATCH_TTL_S)
    with claims.hold(settings, [_alive_key(batch, participant)], owner=owner(batch, participant),
                     ttl_s=ALIVE_TTL_S, timeout_s=ALIVE_TTL_S * 2):
        yield


def is_alive(settings: Settings, batch: str, participant: int) -> bool:
    return claims.holder(settings, _alive_key(batch, participant)) is not None


def has_started(settings: Settings, batch: str, participant: int) -> bool:
    """Whether the participant ever began working on the batch (alive now or not)."""
    return claims.holder(settings, _started_key(batch, participant)) is not None


def written_by(settings: Settings, weeks: Sequence[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
    """Which flow run wrote each week's current report (one read): a week a child wrote before it was killed
    is the child's, though the child never got to publish its outcome row."""
    if not weeks:
        return {}
    with connect(settings) as conn:
        return reports.writers_of(conn, list(weeks))


SPREAD_MIN_OFFLINE_WEEKS = 1500
"""An offline-engine backfill smaller than this is not spread. Measured (bench/scale, 2 cores): a child run
starts 16-31 s after it is created (the worker's poll, a new process, Prefect's and Chronicle's imports; load
8-20), and one worker now writes ~36 offline weeks/s on the lake (312 weeks in ~9 s at load 11-16, since a
group's weeks share one write window: ~5 weeks/s before). A 312-week backfill was done before its child left
`Submitting`, and the spread run took 1.8x as long as one worker (the child's start-up CPU on the same cores):
a child only pays when one worker needs clearly longer than that start-up, ~2 x 20 s of weeks. With an LLM
every week costs seconds, and spreading two weeks already pays (docs/deploy.md, "Many workers")."""


def worth_spreading(settings: Settings, weeks: int) -> bool:
    return weeks >= 2 and (not settings.offline_llm or weeks >= SPREAD_MIN_OFFLINE_WEEKS)


def tidy(settings: Settings) -> None:
    """Delete the bookkeeping of batches that ended long ago (expired claims).

    A batch's own dibs are left to expire rather than dropped at its end: a child that starts late must
    still find every week taken (with `force`, a week it could take would be written again).
    """
    claims.purge_expired(settings, older_than_s=3600.0)

"""A backfill spread over several flow runs (workers): its disjoint shards, and which child runs still live.

The run the operator started (participant 0) plans the weeks, cuts them into disjoint shards — contiguous runs
of the (project, week) order, so a project's weeks stay together and a child reads each project's inputs once —
and starts a child run per shard but its own (`tasks/spread.py`). Nobody negotiates who writes which
week: the shards say so, and the week leases every fan-out takes (`services.weekly.lease_weeks`) keep a week from
being written twice when the parent later writes the weeks of a child that never started or died.

Each shard is claimed once, by its child when it starts or by the parent when the child has not started by the
time the parent is done with its own shard (so a late child ends at once instead of following the parent week
by week). A child holds an `alive` claim while it works, renewed by a heartbeat (a worker killed with -9 stops
renewing it): a shard claimed by its child and no longer alive is a dead child's.
Pure bookkeeping over `chronicle.storage.claims`: no Prefect here (the child runs are started by the task layer).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from chronicle.settings import Settings
from chronicle.storage import claims, reports
from chronicle.storage.db import connect
from chronicle.weekly.grouping import weeks_in_flight

T = TypeVar("T")
SHARD_TTL_S = 6 * 3600.0
"""A shard's claim outlives any batch; the expired ones are purged by a later batch (`tidy`)."""


Weeks = dict[str, list[int]]
"""A shard's weeks: project -> ISO week numbers (a flow-run parameter, so plain JSON)."""

SPREAD_MIN_OFFLINE_WEEKS = 1500
"""An offline-engine backfill smaller than this is not spread. A child run starts 16-31 s after it is created
(the worker's poll, a new process, Prefect's and Chronicle's imports; bench/scale, 2 cores, load 8-20), and one
worker writes ~36 offline weeks/s on the lake: a child only pays when one worker needs clearly longer than that
start-up (scripts/capacity.py: from ~2,500 weeks with one child, ~1,550 with many)."""


def worth_spreading(settings: Settings, weeks: int, max_workers: int | None) -> bool:
    """Whether child runs would make a backfill of `weeks` weeks (`max_workers` of them in flight per run) faster.

    LLM weeks wait on the `llm` limit, which every run on every worker shares: a child adds calls in flight
    only when one run cannot fill the limit by itself (scripts/capacity.py: otherwise spreading never pays and
    costs a child's start-up)."""
    if weeks < 2:
        return False
    if settings.llm.offline:
        return weeks >= SPREAD_MIN_OFFLINE_WEEKS
    return weeks_in_flight(settings, max_workers) < settings.llm.concurrency


def cut(items: Sequence[T], parts: int) -> list[list[T]]:
    """`items` (in the order they are to be written) as `parts` disjoint contiguous shards whose sizes differ
    by at most one; every item in exactly one."""
    size, extra = divmod(len(items), parts)
    out, at = [], 0
    for i in range(parts):
        n = size + (1 if i < extra else 0)
        out.append(list(items[at:at + n]))
        at += n
    return out


def _owner(batch: str, participant: int) -> str:
    return f"shard:{batch}:p{participant}"


def _shard_key(batch: str, shard: int) -> str:
    return f"shard:{batch}:{shard}"


def _alive_key(batch: str, participant: int) -> str:
    return f"shard:{batch}:alive:{participant}"


def own_shard(settings: Settings, batch: str, shard: int, participant: int) -> bool:
    """Take shard `shard` of the batch for `participant` (a child its own; the parent, 0, one whose child never
    started): False when another run took it first. Held for the batch's life: a child that starts after its
    parent took its shard ends at once, and a parent that finds a shard taken knows its child started."""
    key = _shard_key(batch, shard)
    return claims.take(settings, [key], _owner(batch, participant), ttl_s=SHARD_TTL_S)[key].won


@contextmanager
def alive(settings: Settings, batch: str, participant: int) -> Iterator[None]:
    """Say "participant is working" for the block: heartbeat-renewed (every third of `weekly.spread_alive_s`), it
    lapses that long after the process died."""
    ttl_s = settings.weekly.spread_alive_s
    with claims.hold(settings, [_alive_key(batch, participant)], owner=_owner(batch, participant),
                     ttl_s=ttl_s, timeout_s=ttl_s * 2):
        yield


def is_alive(settings: Settings, batch: str, participant: int) -> bool:
    return claims.holder(settings, _alive_key(batch, participant)) is not None


def written_by(settings: Settings, weeks: Sequence[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
    """Which flow run wrote each week's current report (one read): a week a child wrote before it was killed
    is the child's, though the child never got to publish its outcome row."""
    if not weeks:
        return {}
    with connect(settings) as conn:
        return reports.writers_of(conn, list(weeks))


def written_count(settings: Settings, run_ids: Sequence[str]) -> int:
    """How many current reports these flow runs wrote (the children's part of the operator's progress bar)."""
    if not run_ids:
        return 0
    with connect(settings) as conn:
        return reports.count_written_by(conn, list(run_ids))


def tidy(settings: Settings) -> None:
    """Delete the expired bookkeeping of batches that ended long ago."""
    claims.purge_expired(settings, older_than_s=3600.0)

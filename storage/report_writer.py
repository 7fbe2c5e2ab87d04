"""Group commit of weekly reports: concurrent week tasks queue their reports and whoever finds no write running
commits everything queued in one short transaction (with the weeks' `llm_calls` rows and, on the embedded
file, the end of their claims)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

from chronicle.storage import claims
from chronicle.storage.db import transactions
from chronicle.storage.llm_log import CallRow, insert_calls
from chronicle.storage.reports import ReportWrite, guard_keys, save_reports


class Queued(NamedTuple):
    """A report to store, the week's claim that ends with its commit, and the LLM attempts that wrote it."""

    write: ReportWrite
    lease: claims.Lease | None = None
    calls: Sequence[CallRow] = ()


class _Ticket:
    __slots__ = ("args", "calls", "done", "error", "lease", "outcome")

    def __init__(self, args: ReportWrite, lease: claims.Lease | None = None,
                 calls: Sequence[CallRow] = ()) -> None:
        self.args = args
        self.lease = lease
        self.calls = calls
        self.done = False
        self.outcome: str | None = None
        self.error: BaseException | None = None


class ReportWriter:
    """Group commit for concurrent week tasks: whoever arrives while no write is running writes
    everything queued so far in ONE short transaction; the others wait for it.

    Opening DuckDB costs ~12 ms, so one window per report would serialise a backfill on the file
    lock; each caller still returns only once its own row is committed (nothing is lost on a crash).
    A failing batch is retried row by row, so one bad report cannot fail its neighbours.
    """

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self._cond = threading.Condition()
        self._queue: list[_Ticket] = []
        self._writing = False

    def save(self, write: ReportWrite, *, lease: claims.Lease | None = None,
             calls: Sequence[CallRow] = ()) -> str:
        """Store the report (group-committed) with the `llm_calls` rows of the attempts that wrote it (`calls`,
        same transaction); `lease` (the week's claim) ends with it: in the same transaction on the embedded
        file, right after the commit in the lake (claims live in PostgreSQL)."""
        (outcome,) = self.save_many([Queued(write, lease, calls)])
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def save_many(self, items: Sequence[Queued]) -> list[str | BaseException]:
        """Store a group of reports in one window, with whatever other callers queued meanwhile; one outcome per
        item, or the error of that item (the group is retried row by row when its commit fails, as in `save`)."""
        if not items:
            return []
        tickets = [_Ticket(q.write, q.lease, q.calls) for q in items]
        with self._cond:
            self._queue.extend(tickets)
            while self._writing and not all(t.done for t in tickets):
                self._cond.wait()
            batch: list[_Ticket] | None = None
            if not all(t.done for t in tickets):
                batch, self._queue, self._writing = self._queue, [], True
        if batch is not None:
            try:
                self._flush(batch)
            finally:
                with self._cond:
                    self._writing = False
                    self._cond.notify_all()
        out: list[str | BaseException] = []
        for t in tickets:
            if t.error is not None:
                out.append(t.error)
                continue
            if t.lease is not None and self.settings.lake.enabled:
                t.lease.leases.finish([t.lease.key])  # in PostgreSQL: ended by this caller after the commit
            assert t.outcome is not None
            out.append(t.outcome)
        return out

    def _write(self, tickets: list[_Ticket]) -> None:
        guard = guard_keys(t.args.report.project_id for t in tickets)
        leases: dict[claims.Leases, list[str]] = {}
        if not self.settings.lake.enabled:  # the claims live in this file: end them in the same commit
            for t in tickets:
                if t.lease is not None:
                    leases.setdefault(t.lease.leases, []).append(t.lease.key)
            for held, keys in leases.items():
                held.forget(keys)  # no heartbeat renews them from here on
        for attempt in transactions(self.settings, guard=guard):
            with attempt as conn:
                outcomes = save_reports(conn, [t.args for t in tickets])
                insert_calls(conn, [row for t in tickets for row in t.calls])
                for held, keys in leases.items():
                    claims.finish_in(conn, keys, held.owner)
        for t, outcome in zip(tickets, outcomes, strict=True):
            t.outcome, t.done = outcome, True

    def _flush(self, batch: list[_Ticket]) -> None:
        try:
            try:
                self._write(batch)
                return
            except Exception:
                if len(batch) == 1:
                    raise
            for t in batch:
                try:
                    self._write([t])
                except Exception as exc:
                    t.error, t.done = exc, True
        except BaseException as exc:
            # Nobody may wait forever on a ticket: every unfinished one gets the error.
            for t in batch:
                if not t.done:
                    t.error, t.done = exc, True
            if not isinstance(exc, Exception):
                raise


_writers: dict[Any, ReportWriter] = {}
_writers_lock = threading.Lock()


def writer_for(settings: Any) -> ReportWriter:
    """The process's writer for this database file."""
    with _writers_lock:
        writer = _writers.get(settings.db_path)
        if writer is None or writer.settings is not settings:
            writer = _writers[settings.db_path] = ReportWriter(settings)
        return writer

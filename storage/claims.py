"""Claims (leases): one owner at a time for a key, across processes and hosts, on both topologies.

    taken = take(settings, ["week:XH201:202605"], owner, ttl_s=60)  # one round trip; won by exactly one owner
    with hold(settings, ["ingest:/data/a.jsonl"]): ...                # wait for it, keep it alive, release
    with Leases(settings, ttl_s=30) as leases:                        # many keys, one heartbeat
        leases.take(keys); leases.acquire(key, timeout_s)             # now, or waiting while another holds it
        leases.finish([key])                                          # the work is stored: end it, keep a marker

Where the claim lives:

* **Embedded**: table `chronicle_claims` (PRIMARY KEY on `key`) in the DuckDB file, written under the
  file lock. Every process that can write the file is on this machine and takes that lock, so the
  key's uniqueness decides the winner.
* **Lake**: the same table in the catalog's **PostgreSQL** database, reached through DuckDB's postgres
  extension (`postgres_execute` / `postgres_query` on the attached catalog database). Evaluated and
  rejected: DuckLake rows where the earliest committed wins (by `rowid` / `snapshot_id`). DuckLake has
  no unique keys and commits inserts into one table without a conflict, so a contender would have to
  commit, then read back who came first, and every loser would leave a row to clean up; a claim would
  cost a Parquet file or an inlined row plus a snapshot per try, and expiry would be a DELETE that
  conflicts with every other DELETE on the table. PostgreSQL's `INSERT … ON CONFLICT (key) DO UPDATE
  … WHERE <expired or mine>` decides atomically in one statement, ~1–2 ms, with no snapshot at all.

The statement is the same text on both backends (`coordination` below picks where it runs),
and time is the database's own `now()`, so hosts with skewed clocks agree on expiry. A claim expires
after `ttl_s`; a holder's `Leases` (`hold` is one) renews all its keys from one heartbeat every `ttl_s / 3`, so a holder
that is alive keeps it however long it works, and one killed with -9 frees the key `ttl_s` later —
except on the embedded file, where every holder is on this machine: a key whose holder's process is gone
(its pid, from the owner id, no longer exists) is taken at once, so a rerun after a kill does not wait.
Not in lake mode: another host's pid means nothing here, and two containers may share a host name.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import duckdb

from chronicle.settings import Settings
from chronicle.storage import files, lake

log = logging.getLogger("chronicle.storage.claims")

TABLE = "chronicle_claims"
DEFAULT_TTL_S = 10.0
_DDL = (f"CREATE TABLE IF NOT EXISTS {TABLE} (key VARCHAR PRIMARY KEY, owner VARCHAR NOT NULL, "
        "claimed_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL, prev_end TIMESTAMPTZ)",
        # Tables made before `prev_end` (when the previous holder's claim ended) existed.
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS prev_end TIMESTAMPTZ")
_DDL_LOCK = 0x43687243  # the advisory lock key serialising that DDL on the catalog's PostgreSQL ("ChrC")
_ready: set[tuple[str, str]] = set()
_ready_lock = threading.Lock()


class Coordinator:
    """SQL on the database that holds claims: the DuckDB file (embedded) or the catalog's PostgreSQL (lake).

    The statements are the same text on both (portable SQL: INSERT … ON CONFLICT, now(), INTERVAL);
    values are inlined as quoted literals because `postgres_execute` takes one string.
    """

    def __init__(self, conn: duckdb.DuckDBPyConnection, remote: bool) -> None:
        self._conn = conn
        self.remote = remote

    def execute(self, sql: str) -> None:
        if not self.remote:
            self._conn.execute(sql)
            return
        # The postgres extension runs each call in a REPEATABLE READ transaction, where two contenders
        # upserting one key get "could not serialize access"; the statement is re-evaluated on retry.
        for attempt in range(lake.CONFLICT_ATTEMPTS):
            try:
                self._conn.execute(f"CALL postgres_execute('{lake.COORD}', ?)", [sql])
                return
            except duckdb.Error as exc:
                if "could not serialize" not in str(exc) or attempt == lake.CONFLICT_ATTEMPTS - 1:
                    raise
                lake.backoff(attempt)

    def query(self, sql: str) -> list[tuple]:
        if self.remote:
            return self._conn.execute(f"SELECT * FROM postgres_query('{lake.COORD}', ?)", [sql]).fetchall()
        return self._conn.execute(sql).fetchall()


@contextmanager
def coordination(settings: Settings) -> Iterator[Coordinator]:
    """A `Coordinator` for one short step (embedded: under the file lock, like any write window)."""
    if settings.lake.enabled:
        cur = lake.session(settings).db.cursor()
        try:
            yield Coordinator(cur, remote=True)
        finally:
            cur.close()
    else:
        with files.connect_file(settings, read_only=False) as conn:
            yield Coordinator(conn, remote=False)


class ClaimTimeout(TimeoutError):
    """A key stayed claimed by someone else for longer than the caller was willing to wait."""


def _lit(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL byte in a claim key or owner")
    return "'" + value.replace("'", "''") + "'"


def _ms(ttl_s: float) -> str:
    return f"INTERVAL '{max(1, int(ttl_s * 1000))} milliseconds'"


def new_owner() -> str:
    """A unique owner id naming host, process and thread (shown in `chronicle_claims` while held)."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"


@contextmanager
def _coord(settings: Settings) -> Iterator[Coordinator]:
    with coordination(settings) as coord:
        if not coord.remote:
            for ddl in _DDL:  # local and cheap; the file may have been replaced since
                coord.execute(ddl)
        else:
            where = (settings.lake.catalog or "", str(os.getpid()))
            with _ready_lock:
                if where not in _ready:
                    # PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against itself: two processes
                    # creating the table at once can both pass the check, and the second fails on the
                    # catalog's unique index (`pg_type_typname_nsp_index`). A transaction-scoped advisory
                    # lock makes the creators take turns; the later one then finds the table.
                    coord.execute(f"SELECT pg_advisory_xact_lock({_DDL_LOCK}); " + "; ".join(_DDL))
                    _ready.add(where)
        yield coord


@dataclass(frozen=True)
class Taken:
    """The answer for one key of `take`: whether the owner holds it now, and when the claim before it
    ended (None: nobody had claimed the key, or it was released; a `finish`ed claim leaves that time)."""

    won: bool
    previous_end: datetime | None = None


def _upsert(keys: list[str], owner: str, ttl_s: float) -> str:
    values = ", ".join(f"({_lit(k)}, {_lit(owner)}, now(), now() + {_ms(ttl_s)})" for k in keys)
    return (f"INSERT INTO {TABLE} AS c (key, owner, claimed_at, expires_at) VALUES {values} "
            "ON CONFLICT (key) DO UPDATE SET prev_end = CASE WHEN c.owner = excluded.owner THEN c.prev_end "
            "ELSE c.expires_at END, owner = excluded.owner, claimed_at = excluded.claimed_at, "
            "expires_at = excluded.expires_at WHERE c.expires_at < now() OR c.owner = excluded.owner")


def take(settings: Settings, keys: Iterable[str], owner: str, ttl_s: float = DEFAULT_TTL_S) -> dict[str, Taken]:
    """Claim every free (or own, or expired) key for `owner` in one round trip; {key: Taken}."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    among = _key_in(wanted)
    with _coord(settings) as coord:
        coord.execute(_upsert(wanted, owner, ttl_s))
        rows = coord.query(f"SELECT key, owner, prev_end FROM {TABLE} WHERE {among}")
        orphans = [] if coord.remote else _orphaned(rows, owner)
        if orphans:  # expire the dead holders' claims, then take those keys like expired ones
            log.info("claims of %d key(s) held by processes that are gone: taken now, not after the ttl",
                     len(orphans))
            coord.execute(f"UPDATE {TABLE} SET expires_at = now() - INTERVAL '1 millisecond' WHERE "
                          + " OR ".join(f"(key = {_lit(k)} AND owner = {_lit(o)})" for k, o in orphans))
            coord.execute(_upsert([k for k, _ in orphans], owner, ttl_s))
            rows = coord.query(f"SELECT key, owner, prev_end FROM {TABLE} WHERE {among}")
    found = {key: (holder_, prev_end) for key, holder_, prev_end in rows}
    return {key: Taken(found[key][0] == owner, found[key][1]) if key in found else Taken(False) for key in wanted}


def _process_gone(holder: str) -> bool:
    """Whether the owner id (`new_owner`: host:pid:…) names a process of this host that no longer exists."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # exists, another user's
        return False
    return False


def _orphaned(rows: list[tuple], owner: str) -> list[tuple[str, str]]:
    return [(key, holder) for key, holder, _ in rows if holder != owner and _process_gone(holder)]


def _key_in(keys: list[str]) -> str:
    """The condition for the rows of `keys`, in one statement whatever their number."""
    return f"key IN ({', '.join(_lit(k) for k in keys)})"


def _owned(keys: list[str], owner: str) -> str:
    """The WHERE clause for `owner`'s rows of `keys`."""
    return f"WHERE {_key_in(keys)} AND owner = {_lit(owner)}"


def _finish_sql(keys: list[str], owner: str) -> str:
    return f"UPDATE {TABLE} SET expires_at = now(), prev_end = NULL {_owned(keys, owner)}"


def finish(settings: Settings, keys: Iterable[str], owner: str) -> None:
    """End `owner`'s claims on `keys` but keep their rows as markers: whoever takes a key next learns when
    it was last finished (`Taken.previous_end`), e.g. to look for what that holder stored."""
    wanted = sorted(set(keys))
    if wanted:
        with _coord(settings) as coord:
            coord.execute(_finish_sql(wanted, owner))


def finish_in(conn: object, keys: Iterable[str], owner: str) -> None:
    """`finish` inside the caller's embedded-DuckDB transaction (claims live in the same file there), so
    the claim ends in the same commit as the work it guarded."""
    wanted = sorted(set(keys))
    if wanted:
        conn.execute(_finish_sql(wanted, owner))  # type: ignore[attr-defined]


def release(settings: Settings, keys: Iterable[str], owner: str) -> None:
    """Give `keys` up (those `owner` still holds) in one round trip: on the embedded file a write window costs a
    commit and a checkpoint, and a cancelled backfill giving back its leases one window each outlasted the grace
    Prefect's runner gives a run before SIGKILL when the disk was slow."""
    wanted = sorted(set(keys))
    if wanted:
        with _coord(settings) as coord:
            coord.execute(f"DELETE FROM {TABLE} {_owned(wanted, owner)}")


def holder(settings: Settings, key: str) -> str | None:
    """Who holds an unexpired claim on `key`, or None."""
    with _coord(settings) as coord:
        rows = coord.query(f"SELECT owner FROM {TABLE} WHERE key = {_lit(key)} AND expires_at >= now()")
    return rows[0][0] if rows else None


def _prefix(prefix: str) -> str:
    """A LIKE pattern matching keys that start with `prefix` (its own % and _ taken literally)."""
    return _lit(prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%") + " ESCAPE '\\'"


def count(settings: Settings, prefix: str) -> int:
    """How many unexpired claims have a key starting with `prefix` (e.g. the weeks of a batch marked done)."""
    with _coord(settings) as coord:
        rows = coord.query(f"SELECT count(*) FROM {TABLE} WHERE key LIKE {_prefix(prefix)} AND expires_at >= now()")
    return int(rows[0][0])


def purge_expired(settings: Settings, older_than_s: float = 7 * 86400.0) -> None:
    """Delete claims that ended more than `older_than_s` ago (released ones are deleted at once; finished
    ones stay as markers until then)."""
    with _coord(settings) as coord:
        coord.execute(f"DELETE FROM {TABLE} WHERE expires_at < now() - {_ms(older_than_s)}")


class Lease(NamedTuple):
    """One key held by a bulk `Leases`: what a unit of work ends in the commit that stores its result."""

    leases: Leases
    key: str

    def release(self) -> None:
        self.leases.release([self.key])


_open: dict[str, Leases] = {}
_open_lock = threading.Lock()


class Leases:
    """Claims one owner takes in bulk, renews together (one round trip per beat) and ends by the batch.

        with Leases(settings, ttl_s=30) as leases:
            taken = leases.take(keys)        # one round trip for all of them
            ...
            leases.finish([key])             # the work for `key` is stored: end it, leave the marker
        # anything still held is released

    `forget(key)` stops renewing a key whose claim the caller ends itself (e.g. with `finish_in` inside
    its own transaction); after it returns, no beat renews that key again.
    """

    def __init__(self, settings: Settings, *, owner: str | None = None, ttl_s: float = DEFAULT_TTL_S) -> None:
        self.settings, self.owner, self.ttl_s = settings, owner or new_owner(), ttl_s
        self._held: set[str] = set()
        self._lock = threading.Lock()  # held while a beat renews: `forget` waits for it
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Leases:
        with _open_lock:
            _open.setdefault(self.owner, self)
        return self

    @staticmethod
    def of(owner: str | None) -> Leases | None:
        """The open `Leases` of `owner` in this process: threads working for the owner (a fan-out's week tasks)
        take their keys on it, under its one heartbeat."""
        with _open_lock:
            return _open.get(owner) if owner is not None else None

    def __exit__(self, *exc: object) -> None:
        self.close()

    def holds(self, key: str) -> bool:
        with self._lock:
            return key in self._held

    def take(self, keys: Iterable[str]) -> dict[str, Taken]:
        taken = take(self.settings, keys, self.owner, self.ttl_s)
        self._keep(k for k, t in taken.items() if t.won)
        return taken

    def acquire(self, key: str, timeout_s: float) -> Taken:
        """Take `key`, waiting while another owner holds it (the answer tells when that claim ended); ClaimTimeout
        after `timeout_s`. Held from then on like every key this owner took."""
        deadline, pause, told = time.monotonic() + timeout_s, 0.005, False
        while not (taken := self.take([key])[key]).won:
            if not told:
                told = True
                log.info("%r is held by %s; waiting for it", key, holder(self.settings, key))
            if time.monotonic() > deadline:
                raise ClaimTimeout(f"{key!r} is still claimed by {holder(self.settings, key)} after {timeout_s:.0f}s")
            time.sleep(pause)
            pause = min(0.25, pause * 1.5)
        return taken

    def _keep(self, keys: Iterable[str]) -> None:
        """Renew keys this owner has just won (`take`, `acquire`) from now on, and release them at the end."""
        with self._lock:
            self._held.update(keys)
            if self._held and self._thread is None:
                self._thread = threading.Thread(target=self._beat, name="chronicle-leases", daemon=True)
                self._thread.start()

    def forget(self, keys: Iterable[str]) -> None:
        with self._lock:
            self._held.difference_update(keys)

    def finish(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self.forget(keys)
        finish(self.settings, keys, self.owner)

    def release(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self.forget(keys)
        release(self.settings, keys, self.owner)

    def close(self) -> None:
        with _open_lock:
            if _open.get(self.owner) is self:
                del _open[self.owner]
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            left, self._held = sorted(self._held), set()
        try:
            release(self.settings, left, self.owner)
        except Exception as exc:  # they expire by themselves; never mask the caller's own error
            log.warning("could not release %d claim(s): %s", len(left), exc)

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            # The file's window before this owner's lock (see `files.window_lock`): the renewal opens a window.
            with nullcontext() if self.settings.lake.enabled else files.window_lock(), self._lock:
                keys = sorted(self._held)
                if not keys:
                    continue
                try:
                    lost = [k for k, t in take(self.settings, keys, self.owner, self.ttl_s).items() if not t.won]
                except Exception as exc:  # a blip must not kill the holder; the next beat tries again
                    log.warning("could not renew %d claim(s): %s", len(keys), exc)
                    continue
                self._held.difference_update(lost)
            for key in lost:
                log.warning("claim %r of %s was lost (expired and taken over)", key, self.owner)


@contextmanager
def hold(settings: Settings, keys: Iterable[str], *, owner: str | None = None, ttl_s: float = DEFAULT_TTL_S,
         timeout_s: float | None = None) -> Iterator[str]:
    """Hold every key for the block (taken in sorted order, so two holders never deadlock); yields the owner."""
    with Leases(settings, owner=owner, ttl_s=ttl_s) as leases:  # one heartbeat, released when the block ends
        for key in sorted(set(keys)):
            leases.acquire(key, settings.db_lock_timeout_s if timeout_s is None else timeout_s)
        yield leases.owner

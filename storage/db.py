"""Database connections: the ONE place where the topology is chosen.

* **Embedded** (default, `CHRONICLE_CATALOG` unset): one DuckDB file. DuckDB lets one process hold the
  file for writing, and even a read-only connection from another process conflicts with it. So every
  connection is short-lived and taken under a cross-process file lock (`<db>.lock`), and a file held by
  someone who does not take that lock (an analyst's `duckdb` shell) is waited for with backoff and a
  log line instead of crashing. The file lock serialises every writer: write guards are free.
* **Lake** (`CHRONICLE_CATALOG=ducklake:postgres:…`): a DuckLake catalog in PostgreSQL with Parquet
  files under `CHRONICLE_DATA_PATH` (storage/lake.py). Any number of processes on any hosts write at
  once; DuckLake commits optimistically and re-commits non-conflicting changes itself. Two things the
  file lock gave for free are supplied here instead:
  - **logical conflicts** (two transactions deleting from one table) abort a commit: `transactions()`
    and `write()` re-run the whole unit of work on a fresh snapshot;
  - **first inserts** are not conflicts at all (DuckLake has no unique keys), so a unit of work that
    must create a row once names `guard` keys: they are claimed in PostgreSQL (storage/claims.py)
    before the transaction starts, so its snapshot already sees what the previous holder committed.

The same SQL runs on both (storage/*.py); the schema comes from the same migrations, adapted for the
lake in storage/migrations. Each lake commit records the flow run that made it (`tag_commits`), so
DuckLake's snapshots map runs to versions for time travel (docs/analysts.md).
"""

from __future__ import annotations

import contextvars
import importlib.util
import json
import logging
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

import duckdb

from chronicle.settings import Settings
from chronicle.storage import claims, files, lake
from chronicle.storage.migrations import apply_migrations

log = logging.getLogger("chronicle.storage")


class _AbsentPandas:
    """Makes `import pandas` fail at once when pandas is not installed (a meta-path finder, first in line).

    DuckDB's Python binding checks every bound parameter value against pandas' NA/NaT and imports pandas
    for that each time it is not loaded (its import cache keeps successes only): two failed imports per
    non-NULL value, each a walk of sys.path and every meta-path finder, ~0.1 ms — thousands per backfill
    (cProfile of bench/backfill). Only an import statement is cut short (ModuleNotFoundError,
    as without this finder); a probe such as `importlib.util.find_spec("pandas")` (transformers, lancedb)
    goes the usual way and still answers None. A `None` in sys.modules would be simpler but pyarrow's
    Cython import takes it for the module.
    """

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" and sys._getframe(2).f_code.co_name == "_find_and_load_unlocked":
            raise ModuleNotFoundError("No module named 'pandas'", name="pandas")
        return None


if importlib.util.find_spec("pandas") is None and not any(isinstance(f, _AbsentPandas) for f in sys.meta_path):
    sys.meta_path.insert(0, _AbsentPandas())

T = TypeVar("T")

_commit_tag: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("chronicle_commit_tag",
                                                                                    default=None)


def is_conflict(exc: BaseException) -> bool:
    """A lake commit that lost against a concurrent one (re-running the unit of work fixes it)."""
    return isinstance(exc, duckdb.TransactionException) and "conflict" in str(exc).lower()


def _migrate_lake(settings: Settings, session: lake.LakeSession) -> None:
    with claims.hold(settings, ["chronicle:migrate"], ttl_s=120.0):
        cur = session.cursor()
        try:
            for attempt in range(lake.CONFLICT_ATTEMPTS):
                try:
                    apply_migrations(cur, lake=True)
                    break
                except duckdb.TransactionException as exc:
                    if not is_conflict(exc) or attempt == lake.CONFLICT_ATTEMPTS - 1:
                        raise
                    lake.backoff(attempt)
        finally:
            cur.close()
    session.migrated = True


@contextmanager
def _connect_lake(settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
    session = lake.session(settings)
    if not session.migrated:
        _migrate_lake(settings, session)
    cur = session.cursor()
    try:
        yield cur
    finally:
        cur.close()


@contextmanager
def connect(settings: Settings, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the pipeline database for one short unit of work (autocommit unless you BEGIN).

    Embedded: writers and readers of this machine are serialised by `<db>.lock`; keep the `with` block
    short (no LLM calls inside) so concurrent flow runs interleave instead of queueing for minutes.
    Lake: a cursor on the process's lake session; nothing is serialised, each statement reads the newest
    snapshot. Writes that may conflict belong in `transactions()` / `write()`. A database behind the
    shipped migrations is brought up to date first.
    """
    if settings.lake.enabled:
        with _connect_lake(settings) as conn:
            yield conn
        return
    shared = _shared.get()
    if shared is not None and shared.settings is settings:  # inside `one_window` / `held_window`: its window
        yield shared.open()
        return
    with files.connect_file(settings, read_only) as conn:
        yield conn


def read(settings: Settings, query: Callable[..., T], *args: object, **kwargs: object) -> T:
    """`query(conn, *args, **kwargs)` in its own short read-only window: the one way a caller above storage
    reads through a storage query function (instead of a `with connect(): return sql.f(conn, ...)` per use case).
    Inside `one_window(settings)` it reads in that block's window instead of opening one of its own."""
    with connect(settings, read_only=True) as conn:
        return query(conn, *args, **kwargs)


class _Shared:
    """The one window of the embedded file that every `connect` inside a `one_window` / `held_window` block uses:
    opened by the first of them, not before it, and left when the block ends."""

    def __init__(self, settings: Settings, read_only: bool) -> None:
        self.settings, self.read_only = settings, read_only
        self.window: AbstractContextManager[duckdb.DuckDBPyConnection] | None = None
        self.conn: duckdb.DuckDBPyConnection | None = None

    def open(self) -> duckdb.DuckDBPyConnection:
        if self.conn is None:
            window = files.connect_file(self.settings, self.read_only)
            self.conn, self.window = window.__enter__(), window
        return self.conn

    def close(self) -> None:
        if self.window is None:
            return
        window, self.window, self.conn = self.window, None, None
        try:
            window.__exit__(None, None, None)
        except Exception:
            if self.read_only:
                raise
            log.warning("closing a held write window of %s failed; its commits stand", self.settings.db_path,
                        exc_info=True)


_shared: contextvars.ContextVar[_Shared | None] = contextvars.ContextVar("chronicle_shared_window", default=None)


@contextmanager
def _sharing(settings: Settings, read_only: bool) -> Iterator[None]:
    if settings.lake.enabled or _shared.get() is not None:  # the lake has no window to share; an outer block's
        yield
        return
    shared = _Shared(settings, read_only)
    token = _shared.set(shared)
    try:
        yield
    finally:
        _shared.reset(token)
        shared.close()


def one_window(settings: Settings) -> AbstractContextManager[None]:
    """Every read (`read(settings, ...)`, `connect(settings, read_only=True)`) inside the block shares one read-only
    window.

    A desk page reads the signed-in account and then its rows: two windows cost two opens of the file (the open,
    its settings and the migration check are most of a small page's reads). Keep the block to the reads: the
    window holds the embedded file against other processes' writers, so render after it. No write may happen
    inside it (the window is read-only).
    """
    return _sharing(settings, read_only=True)


def held_window(settings: Settings) -> AbstractContextManager[None]:
    """Every `connect(settings)` (and so every transaction) of this thread inside the block uses one window of the
    embedded file, opened by the first of them: each transaction still commits on its own, but the file is
    attached once and checkpointed once, when the block ends. For a writer with commits queued back to back (the
    report writer's group commits): the attach and the checkpoint on detach were most of such a window's cost.
    Keep the block short: it holds the file against other processes and the other threads of this one. The lake
    has no window to hold (a no-op there). The window is left even when its checkpoint fails: its commits are
    already durable (the next window replays them from the WAL), so that failure is logged, not raised.
    """
    return _sharing(settings, read_only=False)


@contextmanager
def tag_commits(**info: str | None) -> Iterator[None]:
    """Record `info` (e.g. flow_run_id, flow) with every lake commit made inside the block."""
    token = _commit_tag.set({k: str(v) for k, v in info.items() if v is not None})
    try:
        yield
    finally:
        _commit_tag.reset(token)


def _tag(conn: duckdb.DuckDBPyConnection) -> None:
    info = _commit_tag.get()
    if not info:
        return
    conn.execute(f"CALL {lake.LAKE}.set_commit_message('chronicle', ?, extra_info => ?)",
                 [info.get("flow", "chronicle"), json.dumps(info, sort_keys=True)])


def _guarded(settings: Settings, guard: Iterable[str]) -> AbstractContextManager[object]:
    keys = sorted(set(guard))
    if not keys or not settings.lake.enabled:
        return nullcontext()  # the embedded file lock already serialises every writer
    return claims.hold(settings, keys)


@contextmanager
def transaction(settings: Settings, *, guard: Iterable[str] = ()) -> Iterator[duckdb.DuckDBPyConnection]:
    """A write connection inside BEGIN/COMMIT: all of the block lands, or none of it.

    One attempt: in the lake a commit that loses against a concurrent one raises (see `is_conflict`);
    use `transactions()` or `write()` where that can happen.
    """
    with _guarded(settings, guard), connect(settings) as conn:
        conn.execute("BEGIN TRANSACTION")
        try:
            if settings.lake.enabled:
                _tag(conn)
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


class _Attempt:
    """One try of a unit of work; a lake commit conflict is swallowed so that the loop tries again."""

    def __init__(self, settings: Settings, guard: Iterable[str], last: bool) -> None:
        self._cm = transaction(settings, guard=guard)
        self._last = last
        self.done = False

    def __enter__(self) -> duckdb.DuckDBPyConnection:
        return self._cm.__enter__()

    def __exit__(self, exc_type, exc, tb) -> bool:  # type: ignore[no-untyped-def]
        try:
            self._cm.__exit__(exc_type, exc, tb)
        except duckdb.TransactionException as commit_exc:
            if self._last or not is_conflict(commit_exc):
                raise
            log.info("lake commit conflict, retrying the unit of work: %s", str(commit_exc).splitlines()[-1])
            return True
        if exc is not None:
            if is_conflict(exc) and not self._last:
                log.info("lake commit conflict, retrying the unit of work: %s", str(exc).splitlines()[-1])
                return True
            return False
        self.done = True
        return False


def transactions(settings: Settings, *, guard: Iterable[str] = ()) -> Iterator[_Attempt]:
    """Attempts of one unit of work, until one commits::

        for attempt in transactions(settings, guard=[f"ingest:{path}"]):
            with attempt as conn:
                ...            # re-run from the start after a lake commit conflict

    Embedded: exactly one attempt (the file lock rules conflicts out). Variables assigned in the body
    keep the values of the attempt that committed.
    """
    guard = tuple(guard)
    n = lake.CONFLICT_ATTEMPTS if settings.lake.enabled else 1
    for i in range(n):
        attempt = _Attempt(settings, guard, last=i == n - 1)
        yield attempt
        if attempt.done:
            return
        lake.backoff(i)


def write(settings: Settings, fn: Callable[[duckdb.DuckDBPyConnection], T], *,
          guard: Iterable[str] = ()) -> T:
    """Run `fn(conn)` in one transaction, re-run on a lake commit conflict; returns what it returned."""
    result: T
    for attempt in transactions(settings, guard=guard):
        with attempt as conn:
            result = fn(conn)
    return result


def dict_rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The rows of the query `cur` just ran, each a dict keyed by column name."""
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def from_json(value: Any) -> Any:
    """A JSON column's value: DuckDB returns JSON as its text, or NULL."""
    return json.loads(value) if isinstance(value, str) else value


def json_rows(cols: Sequence[str], rows: Sequence[Sequence[Any]],
              types: Mapping[str, str]) -> tuple[str, list[str]]:
    """`rows` of `cols` as ONE bound value: (a subquery whose column `r` is one struct per row, its parameters).

    Use as `INSERT INTO t (a, b) SELECT r.a, r.b FROM {subquery}`. DuckDB's binding costs ~20 µs per bound
    Python value (the pandas check above, then the conversion), a batch of reports has ~46 per week: that was
    ~1 ms of an offline week's CPU. DuckDB parses the JSON text itself. `types` gives the DuckDB
    type of each column that is not VARCHAR; dates and timestamps travel as their ISO text.
    """
    structure = json.dumps([{c: types.get(c, "VARCHAR") for c in cols}])
    payload = json.dumps([dict(zip(cols, row, strict=True)) for row in rows], ensure_ascii=False, default=str)
    return "(SELECT unnest(from_json(?, ?)) AS r)", [payload, structure]

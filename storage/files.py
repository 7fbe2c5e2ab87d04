"""The embedded topology's DuckDB file: opened under a cross-process file lock, waited for when someone who
does not take that lock (an analyst's `duckdb` shell) holds it, migrated on first use.

Below both `storage/db.py` (which picks the topology) and `storage/claims.py` (whose embedded table lives
in this file), so neither has to import the other to reach it.
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
from filelock import FileLock, Timeout

from chronicle.settings import Settings
from chronicle.storage.migrations import apply_migrations, is_current

log = logging.getLogger("chronicle.storage")

_thread_lock = threading.RLock()
# Files keep DuckDB 1.4's storage format, so analysts' `duckdb` CLI releases (1.4/1.5 on PyPI today)
# can open them; the Python package writes a newer format by default that those CLIs refuse.
STORAGE_VERSION = "v1.4.0"
"""The format of every file we write (the pipeline database, its compact copies, the lake's sessions)."""
_CONFIG = {"storage_compatibility_version": STORAGE_VERSION}


class DatabaseBusyError(RuntimeError):
    """The DuckDB file stayed locked by another process for longer than `db_lock_timeout_s`."""


def _is_lock_conflict(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text)


def _holder(exc: Exception) -> str:
    # DuckDB names the holder: "... Conflicting lock is held in /usr/bin/python3 (PID 1234) ..."
    match = re.search(r"held in (.+?\(PID \d+\))", str(exc))
    return match.group(1) if match else "another process"


def _lock_holder(path: Path) -> str:
    """` (PID n: command)` of the process holding `<db>.lock`, when this machine can tell (Linux /proc/locks)."""
    try:
        inode = (path.parent / (path.name + ".lock")).stat().st_ino
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[5].rsplit(":", 1)[-1] == str(inode):
                pid = fields[4]
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                return f" (held by PID {pid}: {cmd.strip()[:120]})"
    except OSError:
        pass
    return ""


class _Instance:
    """One in-memory DuckDB instance per process; each window ATTACHes the file to it and DETACHes it after.

    Opening a DuckDB file with `duckdb.connect` starts a whole database instance (~17 ms of CPU, most of it
    setting up built-in functions), paid by every short window; an ATTACH to a living instance costs ~1.5 ms.
    DETACH checkpoints the file and releases its lock exactly as closing the instance did, so other processes
    see the same file between windows. The file is attached under its stem, the name `duckdb.connect` gives it,
    and is the window's default database, so SQL and `current_database()` read as before. One window at a time:
    `connect_file` holds `_thread_lock` (and the file lock) for the whole window; a forked child makes its own.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.db = duckdb.connect(":memory:", config=_CONFIG)

    def attach(self, path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
        alias = _alias(path)
        options = "READ_ONLY" if read_only else f"STORAGE_VERSION '{STORAGE_VERSION}'"
        self.db.execute(f"""ATTACH '{str(path).replace("'", "''")}' AS "{alias}" ({options})""")
        conn = self.db.cursor()
        try:
            conn.execute(f'USE "{alias}"')
            # Timestamps are stored as naive UTC; make TIMESTAMPTZ display agree on every machine.
            conn.execute("SET TimeZone = 'UTC'")
            conn.execute("SET enable_progress_bar = false")  # it would print into the CLI's stdout
        except BaseException:
            conn.close()
            self.detach(path)
            raise
        return conn

    def detach(self, path: Path) -> None:
        try:
            self.db.execute(f'DETACH "{_alias(path)}"')
        except BaseException:
            # The file may still be attached (a checkpoint that failed on a full disk): closing the whole
            # instance lets it go, and the next window starts a new one.
            self.pid = -1
            self.db.close()
            raise


_instance: _Instance | None = None


def _alias(path: Path) -> str:
    """The file's name in the instance: its stem, as `duckdb.connect` names it (quoted; the instance's own
    databases' names are taken)."""
    stem = path.stem if path.stem not in ("memory", "system", "temp") else f"{path.stem}_file"
    return stem.replace('"', '""')


def _attach(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    global _instance
    if _instance is None or _instance.pid != os.getpid():
        _instance = _Instance()
    return _instance.attach(path, read_only)


def _close(path: Path, conn: duckdb.DuckDBPyConnection) -> None:
    """End a window: its connection, then the file's attachment."""
    try:
        conn.close()
    finally:
        assert _instance is not None
        _instance.detach(path)


def _open(path: Path, read_only: bool, deadline: float) -> duckdb.DuckDBPyConnection:
    attempt, waited_since = 0, None
    while True:
        try:
            conn = _attach(path, read_only)
            if waited_since is not None:
                log.warning("DuckDB file %s is free again after %.1fs; continuing", path,
                            time.monotonic() - waited_since)
            return conn
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_conflict(exc):
                raise
            attempt += 1
            if time.monotonic() > deadline:
                raise DatabaseBusyError(
                    f"{path} is held by {_holder(exc)} (an open duckdb shell?) and was not released within the "
                    "lock timeout (CHRONICLE_DB_LOCK_TIMEOUT_S): close that process or wait for it, then run the "
                    "command again (analysts can query the snapshot instead); this run is listed by `chronicle runs`"
                ) from exc
            if waited_since is None:
                waited_since = time.monotonic()
                log.warning("DuckDB file %s is held by %s; waiting for it (up to %.0fs)", path, _holder(exc),
                            deadline - waited_since)
            time.sleep(min(5.0, 0.05 * 2**attempt) * (0.5 + random.random() / 2))


def window_lock() -> threading.RLock:
    """The lock a window holds in this process from its open to its close. Code that holds a lock of its own while
    it opens a window must take this one first: the holder of a window may take that other lock inside it (the
    report writer ends week claims inside its held window), and the opposite order deadlocks."""
    return _thread_lock


@contextmanager
def connect_file(settings: Settings, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
    path = settings.db_path
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path) + ".lock", thread_local=False)
    with _thread_lock:
        try:
            lock.acquire(timeout=1.0)
        except Timeout:
            log.warning("another Chronicle process is writing %s; waiting for its lock", path)
            try:
                lock.acquire(timeout=settings.db_lock_timeout_s)
            except Timeout as exc:
                raise DatabaseBusyError(
                    f"another Chronicle process kept {path}.lock past the lock timeout (CHRONICLE_DB_LOCK_TIMEOUT_S)"
                    f"{_lock_holder(path)}: wait for it to finish (`chronicle runs` shows what runs), then run the "
                    "command again; this run is listed by `chronicle runs`") from exc
        try:
            deadline = time.monotonic() + settings.db_lock_timeout_s
            conn = _open(path, read_only and path.exists(), deadline)
            current = False
            try:
                if not _known_current(path) and not is_current(conn):
                    if read_only:
                        _close(path, conn)
                        conn = _open(path, False, deadline)
                    apply_migrations(conn)
                current = True
                yield conn
            finally:
                _left(path, conn, current)
        finally:
            lock.release()


def _known_current(path: Path) -> bool:
    """Whether the file is as this process left it, current, after its last window (see `_left_current`)."""
    signature = _signature(path)
    return signature is not None and _left_current.get(str(path)) == signature


def _left(path: Path, conn: duckdb.DuckDBPyConnection, current: bool) -> None:
    """End a window; if it was opened on a current file, remember how the file looks once closed."""
    _left_current.pop(str(path), None)
    _close(path, conn)
    if current:
        if len(_left_current) >= 64:  # a long-lived process that saw many homes (the test suite)
            _left_current.clear()
        _left_current[str(path)] = _signature(path)


_left_current: dict[str, tuple[object, ...] | None] = {}
"""Per file: its `_signature` right after this process last closed a window on it, the file being current then.

The migration check (a query, ~1.5 ms of every window) is skipped when the file still has that signature: no one
has written it since, so its `schema_migrations` is the one this process saw. Any other writer (another process,
an analyst's shell, a migration by a newer release, a compaction's swap, a backup copied over it) changes the
file's inode, ctime or its checkpoint headers, or leaves a WAL, and the next window checks again. The one write
it cannot see is SQL of this process's own windows that drops migrations (no code does)."""


def _signature(path: Path) -> tuple[object, ...] | None:
    """The file's identity and state: inode, size, mtime and ctime of it and of its WAL, and the bytes that open its
    two database headers (checksum and checkpoint iteration: any checkpoint rewrites one of them)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        headers = os.pread(fd, 16, 4096) + os.pread(fd, 16, 8192)
    finally:
        os.close(fd)
    try:
        wal = os.stat(str(path) + ".wal")
        wal_state: tuple[int, ...] | None = (wal.st_ino, wal.st_size, wal.st_mtime_ns, wal.st_ctime_ns)
    except OSError:
        wal_state = None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, headers, wal_state)

"""The embedded topology's DuckDB file: opened under a cross-process file lock, waited for when someone who
does not take that lock (an analyst's `duckdb` shell) holds it, migrated on first use.

Below both `storage/db.py` (which picks the topology) and `storage/claims.py` (whose embedded table lives
in this file), so neither has to import the other to reach it.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
from chronicle.storage.migrations import apply_migrations, is_current
from filelock import FileLock, Timeout

from chronicle.settings import Settings

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


def _open(path: Path, read_only: bool, deadline: float) -> duckdb.DuckDBPyConnection:
    attempt, waited_since = 0, None
    while True:
        try:
            conn = duckdb.connect(str(path), read_only=read_only, config=_CONFIG)
            # Timestamps are stored as naive UTC; make TIMESTAMPTZ display agree on every machine.
            conn.execute("SET TimeZone = 'UTC'")
            conn.execute("SET enable_progress_bar = false")  # it would print into the CLI's stdout
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
            try:
                if not is_current(conn):
                    if read_only:
                        conn.close()
                        conn = _open(path, False, deadline)
                    apply_migrations(conn)
                yield conn
            finally:
                conn.close()
        finally:
            lock.release()

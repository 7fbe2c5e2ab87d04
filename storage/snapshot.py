"""Read snapshot for analysts: a copy of the pipeline database, replaced atomically after each writing flow.

DuckDB gives a file to one process at a time for writing, and even a read-only connection from a
second process conflicts with that writer. An analyst who keeps `duckdb chronicle.duckdb` open would
therefore stall every flow run. Instead, analysts open `$CHRONICLE_HOME/chronicle.snapshot.duckdb`
(read-only), which no flow ever opens for writing:

    duckdb -readonly "$CHRONICLE_HOME/chronicle.snapshot.duckdb"

Publishing copies the main file while holding the pipeline's cross-process lock *and* an open DuckDB
connection (so neither a Chronicle process nor a foreign one can write meanwhile), right after a
CHECKPOINT has moved the write-ahead log into the main file; the copy goes to a temporary file next to
the snapshot and is swapped in with `os.replace`. A session that has the old snapshot open keeps
reading the old file (POSIX keeps the unlinked inode alive); its next connection sees the new one.

Before the copy, the main file is compacted when short write windows have fragmented it
(storage/compaction.py): the same window, so a flow's end costs one hold of the database either way.

Only the embedded file needs this. In the lake topology analysts attach the live lake itself
(`chronicle sql --print-attach`): DuckLake readers never block writers and read committed snapshots,
so `publish_snapshot` does nothing there and returns None.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from chronicle.settings import Settings
from chronicle.storage.compaction import Compaction, compact_if_fragmented
from chronicle.storage.db import connect

log = logging.getLogger("chronicle.storage.snapshot")

SNAPSHOT_NAME = "chronicle.snapshot.duckdb"


class SnapshotNotWritten(OSError):
    """The copy could not be written (a full disk, its place taken). The database itself is whole: a CHECKPOINT
    that failed left the write-ahead log in place, and a copy that failed never replaced the old snapshot."""


@dataclass(frozen=True)
class SnapshotInfo:
    """Where a snapshot was published, how big it is, how long the copy held the database, and the
    compaction of the database done first, if it was due (storage/compaction.py)."""

    path: Path
    bytes: int
    tables: int
    seconds: float
    compacted: Compaction | None = None


def _remove_stale_copies(target: Path) -> None:
    """Delete temporary copies a publisher killed mid-copy left beside the snapshot (each as big as the database,
    on the disk that is most likely full). Called inside the write window: every publisher holds it while its
    temporary file exists, so any copy found here is stale."""
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        try:
            stale.unlink()
            log.info("removed %s, left by a snapshot copy that was killed", stale.name)
        except OSError as exc:
            log.warning("could not remove %s, left by a snapshot copy that was killed: %s", stale.name, exc)


def snapshot_path(settings: Settings) -> Path:
    """`$CHRONICLE_HOME/chronicle.snapshot.duckdb` (next to the main file's default location)."""
    return (settings.home / SNAPSHOT_NAME).expanduser().resolve()


def _check_copy(conn: duckdb.DuckDBPyConnection, path: Path) -> int:
    """Open the fresh copy read-only before it replaces the old snapshot: a bad copy never goes live. Attached to
    the window's own instance: a new instance (`duckdb.connect`) would cost ~20 ms of CPU to start."""
    literal = str(path).replace("'", "''")  # ATTACH takes no bound parameters
    conn.execute(f"ATTACH '{literal}' AS chronicle_snapshot_check (READ_ONLY)")
    try:
        return conn.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'chronicle_snapshot_check'"
                            ).fetchall()[0][0]
    finally:
        conn.execute("DETACH chronicle_snapshot_check")


def publish_snapshot(settings: Settings) -> SnapshotInfo | None:
    """Copy the pipeline database to the snapshot path atomically; returns what was published.

    Holds the database for one CHECKPOINT plus a file copy (a fraction of a second for a few hundred MB),
    the same short write window as any other Chronicle writer. None in the lake topology (no copy needed).
    """
    if settings.lake.enabled:
        return None
    target = snapshot_path(settings)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Unique per process and thread: two publishers never share a temporary file.
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    started = time.monotonic()
    try:
        with connect(settings) as conn:
            _remove_stale_copies(target)
            held_from = time.monotonic()
            # CHECKPOINT folds the WAL into the main file, so the file alone is the whole database.
            conn.execute("CHECKPOINT")
            compacted = compact_if_fragmented(conn, settings.db_path)  # conn is on the old file after it
            shutil.copyfile(settings.db_path, tmp)
            held = time.monotonic() - held_from
            tables = _check_copy(conn, tmp)
            # Replace while still holding the lock: snapshots are published in the order they were taken.
            os.replace(tmp, target)
    except (OSError, duckdb.Error) as exc:
        # The CHECKPOINT before the copy writes the main file: on a full disk DuckDB raises its own error (a
        # FatalException that also invalidates the instance), not an OSError. Either way the snapshot was not
        # written and the run's rows are stored (in the WAL at worst); callers treat both alike.
        raise SnapshotNotWritten(f"{type(exc).__name__}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    info = SnapshotInfo(target, target.stat().st_size, tables, time.monotonic() - started, compacted)
    log.info("published read snapshot %s (%d tables, %.1f MB; database held %.2fs)", target, tables,
             info.bytes / 1e6, held)
    return info

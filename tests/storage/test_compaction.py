"""Compaction of the embedded file (storage/compaction.py): short write windows fragment it, the end of a
writing flow (publish_snapshot) copies it compact — every row, constraint, view and index kept, a kill
at any point leaves a whole database."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.lake.helpers import child_env

INSERT = ("INSERT INTO ingest_files (path, format, size, mtime_ns, parsed_bytes, parsed_lines, prefix_sha256, "
          "entries, rejects) SELECT 'f-' || ? || '-' || range, 'jsonl', range, 1, 1, 1, md5(range::VARCHAR), 1, 0 "
          "FROM range(4)")


def write_windows(settings, first: int, n: int) -> None:
    """`n` short write windows, each adding four rows to an indexed table (as the flows' windows do)."""
    from chronicle.storage.db import transaction

    for i in range(first, first + n):
        with transaction(settings) as conn:
            conn.execute(INSERT, [i])


def catalog(path: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(path), read_only=True) as conn:
        return {
            "tables": conn.execute("SELECT table_name, sql FROM duckdb_tables() ORDER BY 1").fetchall(),
            "views": conn.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall(),
            "indexes": conn.execute("SELECT index_name, sql FROM duckdb_indexes() ORDER BY 1").fetchall(),
            "constraints": conn.execute("SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() "
                                        "ORDER BY ALL").fetchall(),
            "files": conn.execute("SELECT * FROM ingest_files ORDER BY path").fetchall(),
            "migrations": conn.execute("SELECT * FROM schema_migrations ORDER BY ALL").fetchall(),
        }


def surplus(path: Path) -> int:
    from chronicle.storage.compaction import extra_row_groups

    with duckdb.connect(str(path), read_only=True) as conn:
        return extra_row_groups(conn)


@pytest.fixture()
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from chronicle.settings import load_settings

    monkeypatch.setenv("CHRONICLE_HOME", str(tmp_path / "home"))
    return load_settings()


@pytest.fixture(scope="module")
def fragmented_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose file was fragmented by MIN_EXTRA_ROW_GROUPS + 16 real write windows, written once per module
    (the windows are most of each test's time); `fragmented` copies it for each test, which compacts its copy."""
    from chronicle.settings import load_settings
    from chronicle.storage.compaction import MIN_EXTRA_ROW_GROUPS

    home = tmp_path_factory.mktemp("fragmented") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHRONICLE_HOME", str(home))
        write_windows(load_settings(), 0, MIN_EXTRA_ROW_GROUPS + 16)
    return home


@pytest.fixture()
def fragmented(settings, fragmented_home: Path):
    """`settings` over a copy of the fragmented home (a copy of a closed DuckDB file keeps its row groups)."""
    shutil.copytree(fragmented_home, settings.home)
    return settings


def test_fragmented_file_is_compacted_at_the_snapshot_with_everything_kept(fragmented) -> None:
    from chronicle.storage.compaction import MIN_EXTRA_ROW_GROUPS
    from chronicle.storage.snapshot import publish_snapshot, snapshot_path

    settings = fragmented
    db = settings.db_path
    # What the module is for: DuckDB 1.4 leaves one row group per window in an indexed table.
    assert surplus(db) >= MIN_EXTRA_ROW_GROUPS, "DuckDB no longer fragments: storage/compaction.py may go"
    before, size_before = catalog(db), db.stat().st_size
    assert len(before["files"]) == 4 * (MIN_EXTRA_ROW_GROUPS + 16)

    info = publish_snapshot(settings)

    assert info is not None and info.compacted is not None
    assert info.compacted.bytes_before == size_before and info.compacted.bytes_after == db.stat().st_size
    assert db.stat().st_size * 4 < size_before, (size_before, db.stat().st_size)
    assert surplus(db) == 0
    assert catalog(db) == before  # every row, table definition, constraint, view and index
    assert catalog(snapshot_path(settings)) == before  # the analysts' copy is the compact file
    assert not list(db.parent.glob("*.compact.tmp")) and not Path(str(db) + ".wal").exists()
    # The compact file is the database from now on: constraints hold, windows write to it.
    with duckdb.connect(str(db)) as conn, pytest.raises(duckdb.ConstraintException):
        conn.execute("INSERT INTO ingest_files SELECT * FROM ingest_files LIMIT 1")
    write_windows(settings, 10_000, 2)
    assert len(catalog(db)["files"]) == len(before["files"]) + 8


def test_a_file_with_little_fragmentation_is_left_alone(settings) -> None:
    from chronicle.storage.compaction import _tmp_path
    from chronicle.storage.snapshot import publish_snapshot

    write_windows(settings, 0, 10)
    inode = settings.db_path.stat().st_ino
    stale = _tmp_path(settings.db_path)
    stale.write_bytes(b"left by a killed compaction")

    info = publish_snapshot(settings)

    assert info is not None and info.compacted is None
    assert settings.db_path.stat().st_ino == inode  # not rewritten
    assert not stale.exists()


# A compaction killed at its two risky points: after the copy, before the swap; right after the swap.
DIES = """
import os, signal, sys
import chronicle.storage.compaction as compaction
from chronicle.settings import load_settings
from chronicle.storage.snapshot import publish_snapshot
replace = os.replace
def dying_replace(src, dst):
    if sys.argv[1] == "after":
        replace(src, dst)
    os.kill(os.getpid(), signal.SIGKILL)
compaction.os.replace = dying_replace
publish_snapshot(load_settings())
"""


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_killed_compaction_leaves_a_whole_database(fragmented, where: str) -> None:
    from chronicle.storage.snapshot import publish_snapshot

    settings = fragmented
    before = catalog(settings.db_path)
    ran = subprocess.run([sys.executable, "-c", DIES, where], env=child_env(settings.home), capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == -signal.SIGKILL, ran.stderr[-2000:]

    assert catalog(settings.db_path) == before  # the old file (before) or the checked copy (after)
    assert (surplus(settings.db_path) == 0) == (where == "after")
    info = publish_snapshot(settings)  # the next flow's end: compacts if still due, removes the leftover
    assert (info is not None) and ((info.compacted is not None) == (where == "before"))
    assert catalog(settings.db_path) == before
    assert not list(settings.db_path.parent.glob("*.compact.tmp"))


def test_a_failed_compaction_is_logged_and_the_file_left_as_it_was(fragmented, monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """Upkeep never fails the flow whose data it would compact: a copy that does not match is discarded."""
    from chronicle.storage import compaction
    from chronicle.storage.snapshot import publish_snapshot

    settings = fragmented
    before, inode = catalog(settings.db_path), settings.db_path.stat().st_ino
    real = compaction._catalog
    monkeypatch.setattr(compaction, "_catalog", lambda conn, database: real(conn, database)
                        + ([("rows", "a row lost in the copy", "1")] if database == "chronicle_compacted" else []))

    with caplog.at_level("WARNING", logger="chronicle.storage.compaction"):
        info = publish_snapshot(settings)

    assert info is not None and info.compacted is None  # the snapshot is still published
    assert settings.db_path.stat().st_ino == inode and catalog(settings.db_path) == before
    assert "compaction of chronicle.duckdb skipped" in caplog.text and "the copy differs" in caplog.text
    assert not list(settings.db_path.parent.glob("*.compact.tmp"))

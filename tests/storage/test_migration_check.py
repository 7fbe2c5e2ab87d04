"""The migration check of a window: skipped when the file is as this process left it, current; done again (and the
file migrated) whenever anything else wrote, replaced or downgraded it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from chronicle.storage import files
from chronicle.storage.migrations import migration_files


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per migration check a window made."""
    seen: list[int] = []
    real = files.is_current

    def counting(conn: duckdb.DuckDBPyConnection) -> bool:
        seen.append(1)
        return real(conn)

    monkeypatch.setattr(files, "is_current", counting)
    return seen


def _window(settings: Any, read_only: bool = False, sql: str = "SELECT 1") -> list[tuple[Any, ...]]:
    with files.connect_file(settings, read_only) as conn:
        return conn.execute(sql).fetchall()


def _versions(settings: Any) -> list[int]:
    return [row[0] for row in _window(settings, True, "SELECT version FROM schema_migrations ORDER BY 1")]


def _shipped() -> list[int]:
    return [version for version, _, _ in migration_files()]


def _empty_database(path: Path) -> Path:
    """A DuckDB file without any table: what a restore of a file older than every migration looks like."""
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE unrelated (a INTEGER)")
    return path


def test_windows_on_a_file_this_process_left_current_skip_the_check(settings: Any, checks: list[int]) -> None:
    _window(settings)
    assert len(checks) == 1  # a new file: checked and migrated
    _window(settings, sql="CREATE TABLE scratch AS SELECT 1 AS a")  # this process's own write
    _window(settings, True)
    _window(settings, True)
    assert len(checks) == 1
    assert _versions(settings) == _shipped()


def test_a_write_by_another_connection_makes_the_next_window_check(settings: Any, checks: list[int]) -> None:
    _window(settings)
    with duckdb.connect(str(settings.db_path)) as other:  # another process (or an analyst's shell)
        other.execute("INSERT INTO schema_migrations (version, name) VALUES (9999, 'from_a_newer_release')")
    _window(settings)
    assert len(checks) == 2
    assert _versions(settings)[-1] == 9999


def test_a_write_left_in_the_wal_makes_the_next_window_check(settings: Any, checks: list[int]) -> None:
    _window(settings)
    with duckdb.connect(str(settings.db_path)) as other:
        other.execute("PRAGMA disable_checkpoint_on_shutdown")
        other.execute("INSERT INTO schema_migrations (version, name) VALUES (9999, 'from_a_newer_release')")
    assert Path(str(settings.db_path) + ".wal").exists()  # the file itself is as this process left it
    _window(settings)
    assert len(checks) == 2
    assert _versions(settings)[-1] == 9999


@pytest.mark.parametrize("how", ["copied over it", "swapped in"])
def test_an_older_file_put_in_its_place_is_migrated(settings: Any, checks: list[int], tmp_path: Path,
                                                     how: str) -> None:
    _window(settings)
    older = _empty_database(tmp_path / "older.duckdb")
    if how == "copied over it":  # same inode: a restore with cp
        shutil.copyfile(older, settings.db_path)
    else:
        os.replace(older, settings.db_path)
    tables = {row[0] for row in _window(settings, True, "SELECT table_name FROM duckdb_tables()")}
    assert len(checks) == 2
    assert {"unrelated", "weekly_reports", "schema_migrations"} <= tables
    assert _versions(settings) == _shipped()


def test_a_window_whose_migration_failed_is_not_remembered(settings: Any, checks: list[int],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(conn: duckdb.DuckDBPyConnection) -> list[int]:
        raise duckdb.IOException("disk full")

    monkeypatch.setattr(files, "apply_migrations", failing)
    with pytest.raises(duckdb.IOException):
        _window(settings)
    monkeypatch.undo()
    _window(settings)
    assert _versions(settings) == _shipped()

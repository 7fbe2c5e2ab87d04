"""Analyst queries over the views in migration 0004, and Parquet export of everything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from chronicle.settings import Settings
from chronicle.storage import lake
from chronicle.storage.db import dict_rows


def weekly_stats(conn: duckdb.DuckDBPyConnection, project_id: str, start: int | None = None,
                 end: int | None = None) -> list[dict[str, Any]]:
    """`weekly_stats` rows of one project, optionally between two YYYYWW week numbers (inclusive)."""
    return dict_rows(conn.execute(
        """SELECT * FROM weekly_stats
           WHERE project_id = $p AND ($s IS NULL OR week_number >= $s) AND ($e IS NULL OR week_number <= $e)
           ORDER BY week_number""",
        {"p": project_id, "s": start, "e": end},
    ))


def relations(conn: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(name, 'table' | 'view') of every user relation in the main schema."""
    rows = conn.execute(
        """SELECT table_name, CASE table_type WHEN 'VIEW' THEN 'view' ELSE 'table' END
           FROM information_schema.tables
           WHERE table_schema = 'main' AND table_catalog = current_database() AND table_name <> 'chronicle_claims'
           ORDER BY 1"""
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def export_parquet(conn: duckdb.DuckDBPyConnection, out_dir: Path) -> list[tuple[str, Path, int]]:
    """Every table and view as `<name>.parquet` (written to a temp name, then renamed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, _kind in relations(conn):
        target = out_dir / f"{name}.parquet"
        tmp = out_dir / f".{name}.parquet.tmp"
        quoted = '"' + name.replace('"', '""') + '"'
        conn.execute(f"COPY (SELECT * FROM {quoted}) TO '{tmp.as_posix()}' (FORMAT parquet)")
        tmp.replace(target)
        n = conn.execute(f"SELECT count(*) FROM {quoted}").fetchall()[0][0]
        written.append((name, target, n))
    return written


def shell_attach_sql(settings: Settings) -> str:
    """SQL for an analyst's `duckdb` shell: attach the live lake, or open the embedded snapshot read-only."""
    if settings.lake.enabled:
        return lake.shell_sql(settings)
    from chronicle.storage.snapshot import snapshot_path

    path = str(snapshot_path(settings)).replace("'", "''")
    return f"ATTACH '{path}' AS chronicle (READ_ONLY); USE chronicle;"

"""Append-only schema migrations.

Each `NNNN_name.sql` file in this folder runs once, in order, inside one transaction, and is
recorded in `schema_migrations`. Never edit a migration that has shipped: add the next number.

The same files build the lake (DuckLake) schema: `for_lake` rewrites them mechanically, in this one
place, because DuckLake has no PRIMARY KEY / UNIQUE constraints, no indexes and only literal DEFAULTs.
What those constraints guaranteed is kept by the writers instead (deterministic ids, MERGE or
delete-then-insert in one transaction, and claims for first inserts: see storage/db.py), and every
write names its timestamp columns so no `DEFAULT current_timestamp` is needed.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

import duckdb

from chronicle.weeks import utc_now

SCHEMA_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP DEFAULT current_timestamp)"
)

_INDEX = re.compile(r"^\s*CREATE\s+(UNIQUE\s+)?INDEX\b[^;]*;\s*$", re.I | re.M)
_TABLE_KEY = re.compile(r",\s*(PRIMARY\s+KEY|UNIQUE)\s*\([^)]*\)", re.I)
_COLUMN_KEY = re.compile(r"\s+PRIMARY\s+KEY\b", re.I)
_COLUMN_UNIQUE = re.compile(r"\s+UNIQUE\b(?!\s*\()", re.I)
_NOW_DEFAULT = re.compile(r"\s+DEFAULT\s+(current_timestamp|now\(\))", re.I)
_BOOL_DEFAULT = re.compile(r"\bDEFAULT\s+(true|false)\b", re.I)


def for_lake(sql: str) -> str:
    """A migration's SQL as DuckLake accepts it: keys, indexes and non-literal defaults removed.

    A PRIMARY KEY column keeps its NOT NULL; `DEFAULT false` becomes the literal `'false'`.
    """
    sql = _INDEX.sub("", sql)
    sql = _TABLE_KEY.sub("", sql)
    sql = _COLUMN_KEY.sub(" NOT NULL", sql)
    sql = _COLUMN_UNIQUE.sub("", sql)
    sql = _NOW_DEFAULT.sub("", sql)
    sql = _BOOL_DEFAULT.sub(lambda m: f"DEFAULT '{m.group(1).lower()}'", sql)
    return re.sub(r"NOT NULL\s+NOT NULL", "NOT NULL", sql, flags=re.I)


@cache
def migration_files() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every migration shipped with the package, in order."""
    out = []
    for entry in resources.files(__package__).iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            out.append((int(name[:4]), name[5:-4], entry.read_text(encoding="utf-8")))
    return sorted(out)


def is_current(conn: duckdb.DuckDBPyConnection) -> bool:
    """Whether every shipped migration is recorded (one cheap query; checked at every open)."""
    shipped = [version for version, _, _ in migration_files()]
    try:
        # The whole list, not the maximum: migrations can land out of number order on different branches. Sorted
        # here: DuckDB's ordered list() aggregate costs ~1 ms more than fetching the few rows.
        done = sorted(row[0] for row in conn.execute("SELECT version FROM schema_migrations").fetchall())
        return done == shipped
    except duckdb.CatalogException:  # a new, empty database
        return False


def apply_migrations(conn: duckdb.DuckDBPyConnection, *, lake: bool = False) -> list[int]:
    """Apply the migrations this database has not seen; return the versions applied.

    In the lake, the caller holds the `migrate` claim so that two processes never migrate at once.
    """
    adapt = for_lake if lake else (lambda sql: sql)
    conn.execute(adapt(SCHEMA_MIGRATIONS))
    done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    applied = []
    for version, name, sql in migration_files():
        if version in done:
            continue
        conn.execute("BEGIN TRANSACTION")
        try:
            conn.execute(adapt(sql))
            conn.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                         [version, name, utc_now()])
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            raise
        applied.append(version)
    return applied

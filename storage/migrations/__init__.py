"""Append-only schema migrations.

Each `NNNN_name.sql` file in this folder runs once, in order, inside one transaction, and is
recorded in `schema_migrations`. Never edit a migration that has shipped: add the next number.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import duckdb


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
        # The whole list, not the maximum: migrations can land out of number order on different branches.
        done = conn.execute("SELECT list(version ORDER BY version) FROM schema_migrations").fetchall()[0][0]
        return done == shipped
    except duckdb.CatalogException:  # a new, empty database
        return False


def apply_migrations(conn: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply the migrations this database has not seen; return the versions applied."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP DEFAULT current_timestamp)"
    )
    done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    applied = []
    for version, name, sql in migration_files():
        if version in done:
            continue
        conn.execute("BEGIN TRANSACTION")
        try:
            conn.execute(sql)
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, name])
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            raise
        applied.append(version)
    return applied

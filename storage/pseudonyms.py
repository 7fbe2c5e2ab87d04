"""The pseudonym mapping of each project (table `pseudonyms`): read before a week's entries are shown to an
LLM, written with the placeholders numbered for the first time. The only place the real values are kept."""

from __future__ import annotations

import duckdb


def load(conn: duckdb.DuckDBPyConnection, project_id: str) -> dict[tuple[str, str], str]:
    rows = conn.execute("SELECT family, value, placeholder FROM pseudonyms WHERE project_id = ?",
                        [project_id]).fetchall()
    return {(family, value): placeholder for family, value, placeholder in rows}


def save(conn: duckdb.DuckDBPyConnection, project_id: str, new: dict[tuple[str, str], str]) -> None:
    """Store new placeholders; a value another run numbered meanwhile keeps the number it got first."""
    for (family, value), placeholder in new.items():  # (no ON CONFLICT: a lake table has no key)
        conn.execute("INSERT INTO pseudonyms (project_id, family, value, placeholder) SELECT ?, ?, ?, ? "
                     "WHERE NOT EXISTS (SELECT 1 FROM pseudonyms WHERE project_id = ? AND family = ? AND value = ?)",
                     [project_id, family, value, placeholder, project_id, family, value])

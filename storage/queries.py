"""Read-side queries over raw logs used by the CLI and the demo."""

from __future__ import annotations

from typing import Any

import duckdb

from chronicle.ingest.model import STANDARD_TYPES
from chronicle.storage.db import dict_rows


def week_table(conn: duckdb.DuckDBPyConnection, project_id: str | None = None) -> list[dict[str, Any]]:
    """Entries per (project, ISO week) with the standard event types as columns."""
    type_cols = ", ".join(f"count(*) FILTER (WHERE type = '{t}') AS \"{t}\"" for t in STANDARD_TYPES)
    return dict_rows(conn.execute(
        f"""SELECT project_id, week_number, min(local_date) AS first_day, count(*) AS entries, {type_cols}
            FROM raw_logs WHERE $project IS NULL OR project_id = $project
            GROUP BY project_id, week_number ORDER BY project_id, week_number""",
        {"project": project_id},
    ))


def projects(conn: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT project_id FROM raw_logs ORDER BY 1").fetchall()]

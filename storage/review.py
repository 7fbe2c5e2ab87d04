"""The review queue: reports the faithfulness guard flagged, accepting one, and the backlog per project."""

from __future__ import annotations

from typing import Any

import duckdb

from chronicle.storage.db import dict_rows, from_json
from chronicle.weeks import utc_now


def review_queue(conn: duckdb.DuckDBPyConnection, project_id: str | None = None) -> list[dict[str, Any]]:
    """Flagged reports, oldest week first (`chronicle review`)."""
    out = dict_rows(conn.execute(
        """SELECT project_id, week_number, start_date, status, model, version, review_reasons, updated_at
           FROM weekly_reports WHERE needs_review AND (? IS NULL OR project_id = ?)
           ORDER BY project_id, week_number""", [project_id, project_id]))
    for row in out:
        row["review_reasons"] = from_json(row["review_reasons"]) or []
    return out


def accept_review(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int, *, reviewer: str,
                  note: str | None) -> int | None:
    """Clear a flagged report's `needs_review`, recording who accepted which version; the accepted version,
    or None when the week has no flagged report."""
    found = conn.execute("SELECT version FROM weekly_reports WHERE project_id = ? AND week_number = ? AND needs_review",
                         [project_id, week_number]).fetchall()
    if not found:
        return None
    version = found[0][0]
    conn.execute(
        """UPDATE weekly_reports SET needs_review = false, reviewed_by = ?, reviewed_at = ?, reviewed_version = ?,
               review_note = ? WHERE project_id = ? AND week_number = ?""",
        [reviewer, utc_now(), version, note, project_id, week_number])
    return version


def review_backlog(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The `review_backlog` view: weeks awaiting review per project."""
    return dict_rows(conn.execute("SELECT * FROM review_backlog ORDER BY project_id"))

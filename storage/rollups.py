"""`chronicle_rollups`: monthly/quarterly/yearly folds of old weeks, keyed by a hash of what they cover."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb


@dataclass(frozen=True)
class Rollup:
    project_id: str
    level: str
    period: str
    first_week: int
    last_week: int
    covered_weeks: tuple[int, ...]
    covered_hash: str
    summary: str
    model: str


def load(conn: duckdb.DuckDBPyConnection, project_id: str) -> dict[tuple[str, str], Rollup]:
    rows = conn.execute(
        """SELECT project_id, level, period, first_week, last_week, covered_weeks, covered_hash, summary, model
           FROM chronicle_rollups WHERE project_id = ?""",
        [project_id],
    ).fetchall()
    out = {}
    for r in rows:
        out[(r[1], r[2])] = Rollup(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6], r[7], r[8])
    return out


def save(conn: duckdb.DuckDBPyConnection, rollups: list[Rollup]) -> None:
    """Insert or replace rollups (one row per project, level and period)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    for r in rollups:
        conn.execute(
            """INSERT INTO chronicle_rollups (project_id, level, period, first_week, last_week, covered_weeks,
                   covered_hash, summary, model, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (project_id, level, period) DO UPDATE SET first_week = excluded.first_week,
                   last_week = excluded.last_week, covered_weeks = excluded.covered_weeks,
                   covered_hash = excluded.covered_hash, summary = excluded.summary, model = excluded.model,
                   created_at = excluded.created_at""",
            [r.project_id, r.level, r.period, r.first_week, r.last_week, json.dumps(list(r.covered_weeks)),
             r.covered_hash, r.summary, r.model, now],
        )

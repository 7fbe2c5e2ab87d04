"""`chronicle_rollups`: monthly/quarterly/yearly folds of old weeks, keyed by a hash of what they cover."""

from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb

from chronicle.weeks import utc_now


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
    """Insert or replace rollups (one row per project, level and period).

    MERGE is one statement, so the replacement is atomic even on an autocommit connection.
    """
    now = utc_now()
    for r in rollups:
        conn.execute(
            """MERGE INTO chronicle_rollups t
               USING (SELECT ? AS project_id, ? AS level, ? AS period, ? AS first_week, ? AS last_week,
                             ? AS covered_weeks, ? AS covered_hash, ? AS summary, ? AS model, ? AS created_at) s
               ON t.project_id = s.project_id AND t.level = s.level AND t.period = s.period
               WHEN MATCHED THEN UPDATE SET first_week = s.first_week, last_week = s.last_week,
                   covered_weeks = s.covered_weeks, covered_hash = s.covered_hash, summary = s.summary,
                   model = s.model, created_at = s.created_at
               WHEN NOT MATCHED THEN INSERT (project_id, level, period, first_week, last_week, covered_weeks,
                   covered_hash, summary, model, created_at)
                   VALUES (s.project_id, s.level, s.period, s.first_week, s.last_week, s.covered_weeks,
                           s.covered_hash, s.summary, s.model, s.created_at)""",
            [r.project_id, r.level, r.period, r.first_week, r.last_week, json.dumps(list(r.covered_weeks)),
             r.covered_hash, r.summary, r.model, now],
        )

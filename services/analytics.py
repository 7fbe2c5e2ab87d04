"""Analyst use cases: a project's weekly stats, its trend charts, the Parquet export."""

from __future__ import annotations

from pathlib import Path

from chronicle.analytics.chart_key import chart_paths, charts_current
from chronicle.settings import Settings
from chronicle.storage.analytics import weekly_stats
from chronicle.storage.db import connect, read

TRIAL_KEYS = ("enrolled", "ae", "sae", "deviations")
"""Weekly counts that make a project a trial; a project without any (an assistant's notes) gets no chart."""


def write_charts(settings: Settings, project_id: str, out_dir: Path) -> list[Path]:
    """The project's enrolment and safety charts as PNG files in `out_dir`."""
    # matplotlib (~0.4 s to import) only where a chart is drawn: the flows that import this module
    # usually find their charts current (see `trial_charts`).
    from chronicle.analytics.charts import project_charts

    return project_charts(project_id, read(settings, weekly_stats, project_id), out_dir)


def trial_charts(settings: Settings, projects: list[str], out_dir: Path) -> dict[str, list[Path]]:
    """Charts of every project in `projects` that has trial events, read in one window.

    A project whose PNGs in `out_dir` were drawn from the same rows (the key stamped in each file) is not
    drawn again: a rerun, or a backfill whose raw logs did not change, returns the same files as they are.
    """
    with connect(settings, read_only=True) as conn:
        stats = {p: weekly_stats(conn, p) for p in projects}
    out: dict[str, list[Path]] = {}
    for project_id, rows in stats.items():
        if not rows or not any(r[k] for r in rows for k in TRIAL_KEYS):
            continue
        if charts_current(project_id, rows, out_dir):
            out[project_id] = list(chart_paths(project_id, out_dir))
            continue
        from chronicle.analytics.charts import project_charts  # see `write_charts`

        out[project_id] = project_charts(project_id, rows, out_dir)
    return out

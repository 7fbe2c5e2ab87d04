"""Chart artifacts: the weekly trend PNGs attached to the weekly and backfill runs in the Prefect UI."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from chronicle.analytics.charts import project_charts
from chronicle.settings import get_settings
from storage.analytics import weekly_stats
from storage.db import connect

TRIAL_KEYS = ("enrolled", "ae", "sae", "deviations")


def _key(project_id: str) -> str:
    return "charts-" + (re.sub(r"[^a-z0-9]+", "-", project_id.lower()).strip("-") or "project")


def _markdown(project_id: str, paths: list[Path]) -> str:
    # Inline data URIs: the artifact shows the pictures without a file server next to Prefect.
    parts = [f"# {project_id}: weekly trends\n"]
    for path in paths:
        data = base64.b64encode(path.read_bytes()).decode()
        parts.append(f"![{path.stem}](data:image/png;base64,{data})\n\n`{path}`\n")
    return "\n".join(parts)


@task(name="chart-artifacts", cache_policy=NO_CACHE)
def publish_charts(projects: list[str]) -> list[str]:
    """Write each trial project's charts under `$CHRONICLE_HOME/charts` and attach them as artifacts.

    Projects without trial events (an assistant's notes) get no chart: it would be all zeros.
    """
    settings = get_settings()
    out_dir = settings.home.resolve() / "charts"
    with connect(settings) as conn:
        stats = {p: weekly_stats(conn, p) for p in projects}
    written: list[str] = []
    for project_id, rows in stats.items():
        if not rows or not any(r[k] for r in rows for k in TRIAL_KEYS):
            continue
        paths = project_charts(project_id, rows, out_dir)
        create_markdown_artifact(markdown=_markdown(project_id, paths), key=_key(project_id),
                                 description=f"Weekly enrolment and AE / SAE / deviations of {project_id}")
        written.extend(str(p) for p in paths)
    return written

"""Chart artifacts: the weekly trend PNGs attached to the weekly and backfill runs in the Prefect UI."""

from __future__ import annotations

import base64
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from chronicle.names import bounded_name
from chronicle.services.analytics import trial_charts
from chronicle.settings import Settings


def _key(project_id: str) -> str:
    return "charts-" + bounded_name(project_id, limit=48, lower=True)


def _markdown(project_id: str, paths: list[Path]) -> str:
    # Inline data URIs: the artifact shows the pictures without a file server next to Prefect.
    parts = [f"# {project_id}: weekly trends\n"]
    for path in paths:
        data = base64.b64encode(path.read_bytes()).decode()
        parts.append(f"![{path.stem}](data:image/png;base64,{data})\n\n`{path}`\n")
    return "\n".join(parts)


@task(name="chart-artifacts", cache_policy=NO_CACHE)
def publish_charts(settings: Settings, projects: list[str]) -> list[str]:
    """Write each trial project's charts under `$CHRONICLE_HOME/charts` and attach them as artifacts.

    Projects without trial events (an assistant's notes) get no chart: it would be all zeros.
    """
    written: list[str] = []
    for project_id, paths in trial_charts(settings, projects, settings.home.resolve() / "charts").items():
        create_markdown_artifact(markdown=_markdown(project_id, paths), key=_key(project_id),
                                 description=f"Weekly enrolment and AE / SAE / deviations of {project_id}")
        written.extend(str(p) for p in paths)
    return written

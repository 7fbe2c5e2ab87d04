"""`chronicle demo`: the main job end to end on the bundled sample, with embedded defaults."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from chronicle.cli.common import console, progress_bar, run_flow, settings_from_options
from chronicle.settings import Settings


def _step(title: str) -> None:
    console.rule(f"[bold cyan]{title}")


def run_demo(home: str | None, seed: int) -> Settings:
    settings = settings_from_options(home)
    from chronicle.sample import generate_sample

    started = time.perf_counter()
    sample_dir = settings.home.resolve() / "sample"
    _step(f"1. sample trial -> {sample_dir}")
    manifest = generate_sample(sample_dir, seed=seed)
    console.print(f"{len(manifest.files)} files, projects {', '.join(manifest.projects)}")

    # The sample's CSV export uses other column names; map them as a user would in chronicle.toml.
    if not settings.ingest.column_map:
        settings = settings.updated(column_map=manifest.column_map)

    _step("2. ingest into DuckDB")
    _ingest_sample(settings, sample_dir, manifest.projects)

    _step("3. weekly chronicle: backfill every sample week")
    from chronicle.cli.report_cmds import demo_weekly

    demo_weekly(settings)

    _step("4. distill the daily notes into LanceDB and the knowledge files")
    from chronicle.cli.memory_cmds import demo_distill

    demo_distill(settings)

    _step("5. charts")
    from chronicle.services.analytics import write_charts

    chart_dir = settings.home.resolve() / "charts"
    for project in manifest.projects:
        for path in write_charts(settings, project, chart_dir):
            console.print(f"chart: {path}")

    _step("done")
    _print_where_to_look(settings, home)
    console.print(f"finished in {time.perf_counter() - started:.1f}s")
    return settings


def _ingest_sample(settings: Settings, sample_dir: Path, projects: tuple[str, ...]) -> None:
    """Ingest the sample's logs and notes; show the first and last of the trial's project-weeks."""
    from chronicle.cli.main import print_ingest_summary, print_week_table
    from chronicle.flows.ingest_logs import ingest_logs

    with progress_bar():
        summary = run_flow(settings, ingest_logs, [str(sample_dir / "logs"), str(sample_dir / "memory")])
    print_ingest_summary(summary)

    from chronicle.storage.db import read
    from chronicle.storage.queries import week_table

    trial = [r for r in read(settings, week_table) if r["project_id"] in projects]
    print_week_table(trial[:6] + trial[-3:])
    console.print(f"... {len(trial)} project-weeks in all; full table: chronicle weeks --home {settings.home}")


def _print_where_to_look(settings: Settings, home: str | None) -> None:
    """Where the results are: the database, the Prefect UI, the review desk."""
    console.print(f"DuckDB: {settings.db_path}")
    sql = "select week_number, count(*) from raw_logs group by 1 order by 1"
    console.print(f'try:  duckdb {settings.db_path} -c "{sql}"')
    from chronicle.deployments import local_api

    server = local_api.running()
    if server:  # the runs of this demo are in its UI; the server outlives the command on purpose (reused)
        console.print(f"Prefect UI: {server.ui} (background server, reused by later commands; "
                      "`chronicle server stop` stops it)")
    home = f" --home {settings.home}" if home else ""
    console.print(f"review desk: chronicle desk user add me --name \"Your Name\" --role '*=reviewer'{home}, then "
                  f"chronicle desk{home} and open http://127.0.0.1:{settings.desk.port}/ (docs/desk.md)")


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(home: str | None = typer.Option(None, "--home", help="Data folder (default ./.chronicle)."),
             seed: int = typer.Option(7, help="Sample generator seed.")) -> None:
        """Run the whole pipeline on the bundled sample trial (offline engines where nothing is configured)."""
        run_demo(home, seed)



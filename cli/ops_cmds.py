"""Operations commands: `serve`, `setup`, `deploy-check`, `runs`, `snapshot`."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from cli.common import console, err, load_settings

HomeOpt = typer.Option(None, "--home", help="Data folder (overrides CHRONICLE_HOME).")


def prefect_api_url() -> str | None:
    """The configured Prefect API, or None. Without one, Prefect would start a throw-away local server."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def prefect_states(run_ids: list[str], timeout_s: float = 3.0) -> dict[str, dict[str, Any]] | None:
    """Prefect's view of these flow runs (state, run name), or None when no API answers quickly."""
    import uuid

    import httpx

    url = prefect_api_url()
    if not url or not run_ids:
        return None
    try:
        httpx.get(f"{url.rstrip('/')}/health", timeout=timeout_s).raise_for_status()
    except httpx.HTTPError:
        return None
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    ids = []
    for run_id in run_ids:
        try:
            ids.append(uuid.UUID(run_id))
        except ValueError:  # a run made outside Prefect has no flow run to look up
            continue
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)), limit=len(ids))
    return {str(r.id): {"state": r.state.name if r.state else "?", "name": r.name} for r in runs}


def recent_runs(settings: Any, limit: int, flow: str | None) -> list[dict[str, Any]]:
    """Newest `pipeline_runs` rows, optionally only flows whose name contains `flow`."""
    from storage.db import connect
    from storage.runs import recent_runs as query_runs

    with connect(settings, read_only=True) as conn:
        return query_runs(conn, limit, flow)


def _brief(text: str | None, width: int = 60) -> str:
    if not text:
        return ""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _counts_brief(counts: Any) -> str:
    """A few scalar counts of the run (`entries_added=12 files=3`), not the whole JSON."""
    try:
        data = json.loads(counts) if isinstance(counts, str) else (counts or {})
    except ValueError:
        return _brief(counts)
    scalars = [f"{k}={v}" for k, v in data.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    return _brief(" ".join(scalars[:4]))


def print_runs(rows: list[dict[str, Any]], states: dict[str, dict[str, Any]] | None) -> None:
    title = "pipeline_runs (newest first)" + ("" if states is not None else " — Prefect API not reachable")
    table = Table("started (UTC)", "flow", "state", "Prefect", "took", "counts", "flow run", title=title)
    for row in rows:
        prefect = (states or {}).get(row["flow_run_id"])
        took = f"{(row['ended_at'] - row['started_at']).total_seconds():.1f}s" if row["ended_at"] else "running"
        state = row["state"] if not row["message"] else f"{row['state']}: {_brief(row['message'], 40)}"
        table.add_row(row["started_at"].strftime("%Y-%m-%d %H:%M:%S"), row["flow_name"], state,
                      f"{prefect['state']} ({prefect['name']})" if prefect else "—", took,
                      _counts_brief(row["counts"]), row["flow_run_id"][:8])
    console.print(table)


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(limit: int | None = typer.Option(None, help="Most flow runs executing at once (default: no limit)."),
              home: str | None = HomeOpt) -> None:
        """Serve every deployment (schedules + UI-triggered runs) from this one process until Ctrl-C."""
        settings = load_settings(home)
        # Chronicle's own progress lines on the console (Prefect keeps its own logging configuration).
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        chronicle_log = logging.getLogger("chronicle")
        chronicle_log.addHandler(handler)
        chronicle_log.setLevel(logging.INFO)
        chronicle_log.propagate = False  # or Prefect's root console handler prints warnings a second time
        from deployments.serve import serve_all

        if not prefect_api_url():
            err.print("[yellow]PREFECT_API_URL is not set: serving against a temporary local Prefect server. "
                      "Start `prefect server start` and `prefect config set PREFECT_API_URL=...` for the UI.[/]")
        serve_all(settings, limit=limit)

    @app.command()
    def setup(work_pool: bool = typer.Option(True, help="Also create the process work pool."),
              home: str | None = HomeOpt) -> None:
        """Create the global concurrency limits (`llm`, `duckdb-writer`) and the work pool; safe to repeat."""
        settings = load_settings(home)
        from deployments.setup import run_setup

        for line in run_setup(settings, work_pool=work_pool):
            console.print(line)

    @app.command("deploy-check")
    def deploy_check(file: Path = typer.Option(Path("prefect.yaml"), help="The prefect.yaml to check."),
                     write: bool = typer.Option(False, "--write", help="Re-render the file from the registry."),
                     home: str | None = HomeOpt) -> None:
        """Check that prefect.yaml matches deployments/definitions.py (for these settings), or rewrite it."""
        settings = load_settings(home)
        from deployments.yamlfile import differences, render_text

        if write:
            file.write_text(render_text(settings), encoding="utf-8")
            console.print(f"wrote {file}")
            return
        problems = differences(file, settings)
        for line in problems:
            err.print(f"[red]{line}[/]")
        if problems:
            err.print("run `chronicle deploy-check --write` to re-render it")
            raise typer.Exit(1)
        console.print(f"{file} matches the deployment registry")

    @app.command()
    def runs(limit: int = typer.Option(20, "--limit", "-n", min=1, help="How many runs."),
             flow: str | None = typer.Option(None, "--flow", help="Only flows whose name contains this."),
             home: str | None = HomeOpt) -> None:
        """Recent flow runs from DuckDB (pipeline_runs) with their Prefect state when the API is reachable."""
        settings = load_settings(home)
        rows = recent_runs(settings, limit, flow)
        if not rows:
            console.print("no runs recorded yet")
            return
        print_runs(rows, prefect_states([r["flow_run_id"] for r in rows]))

    @app.command()
    def snapshot(home: str | None = HomeOpt) -> None:
        """Publish the analysts' read-only copy of the database now (flows do it after every write)."""
        settings = load_settings(home)
        from storage.snapshot import publish_snapshot

        info = publish_snapshot(settings)
        if info is None:
            console.print("lake topology: analysts attach the live lake, no snapshot needed "
                          "(`duckdb -cmd \"$(chronicle sql --print-attach)\"`)")
            return
        console.print(f"snapshot {info.path} ({info.tables} tables, {info.bytes / 1e6:.1f} MB) in {info.seconds:.2f}s")
        console.print(f"query it while flows run:  duckdb -readonly {info.path}")

"""Operations commands: `serve`, `setup`, `deploy-check`, `runs`, `snapshot`."""

from __future__ import annotations

import logging
from pathlib import Path

import typer

from chronicle.cli import common
from chronicle.cli.common import HomeOpt, console, err, fail, fail_if_disk_full, read_settings, settings_from_options
from chronicle.cli.output import Format, emit, format_option


def prefect_states(run_ids: list[str]) -> dict[str, str]:
    """Prefect's state name of these flow runs, from the API commands use (`--prefect` only: it starts one)."""
    import uuid

    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from chronicle.services.prefect_client import prefect_client

    ids = []
    for run_id in run_ids:
        try:
            ids.append(uuid.UUID(run_id))
        except ValueError:  # a run made outside Prefect has no flow run to look up
            continue
    api = common.ensure_api()
    with temporary_settings(updates={PREFECT_API_URL: api.url} if api.url else {}), \
            prefect_client() as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)), limit=len(ids))
    return {str(r.id): r.state.name if r.state else "?" for r in runs}


def serve(limit: int | None = typer.Option(None, help="Most flow runs executing at once (default: no limit)."),
          home: str | None = HomeOpt) -> None:
    """Serve every deployment (schedules + UI-triggered runs) from this one process until Ctrl-C."""
    settings = settings_from_options(home)
    # Chronicle's own progress lines on the console (Prefect keeps its own logging configuration).
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    chronicle_log = logging.getLogger("chronicle")
    chronicle_log.addHandler(handler)
    chronicle_log.setLevel(logging.INFO)
    chronicle_log.propagate = False  # or Prefect's root console handler prints warnings a second time
    import os

    from prefect.settings import PREFECT_API_URL, temporary_settings

    from chronicle.deployments import local_api
    from chronicle.deployments.serve import serve_all

    api = common.ensure_api()
    if api.url:
        os.environ["PREFECT_API_URL"] = api.url  # the served runs are subprocesses: they read the environment
        err.print(f"serving against the Prefect API at {api.url} ({api.source}); "
                  f"UI: {api.url.removesuffix('/api')}")
    gone = (local_api.watch(api.url, "serving stops; `chronicle serve` starts it again")
            if api.source == "background" else None)  # never serving a dead address
    try:
        with temporary_settings(updates={PREFECT_API_URL: api.url} if api.url else {}):
            serve_all(settings, limit=limit)
    finally:
        if gone is not None and gone.is_set():  # stopped because its server went away, not by the operator
            raise typer.Exit(1)


def setup(work_pool: bool = typer.Option(True, help="Also create the process work pool."),
          check_only: bool = typer.Option(False, "--check", help="Only list what exists on the Prefect "
                                          "server (limits, pool, notification block, automations); "
                                          "exit 1 if something is missing."),
          home: str | None = HomeOpt) -> None:
    """Create the storage, the global concurrency limits (`llm`, `duckdb-writer`), the work pool and the
    alert automations (docs/operating.md); safe to repeat."""
    settings = settings_from_options(home)
    from chronicle.deployments.setup import check_setup, run_setup

    if check_only:
        lines, ok = check_setup(settings)
        for line in lines:
            console.print(line, soft_wrap=True)
        if not ok:
            raise typer.Exit(1)
        return

    try:
        for line in run_setup(settings, work_pool=work_pool):
            console.print(line, soft_wrap=True)
    except Exception as exc:
        fail_if_disk_full(settings, exc, "`chronicle setup`")
        raise


def deploy_check(file: Path = typer.Option(Path("prefect.yaml"), help="The prefect.yaml to check."),
                 write: bool = typer.Option(False, "--write", help="Re-render the file from the registry."),
                 home: str | None = HomeOpt) -> None:
    """Check that prefect.yaml matches deployments/definitions.py (for these settings), or rewrite it."""
    settings = settings_from_options(home)
    from chronicle.deployments.yamlfile import differences, render_text

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


def runs(limit: int = typer.Option(20, "--limit", "-n", min=1, help="How many runs."),
         flow: str | None = typer.Option(None, "--flow", help="Only flows whose name contains this."),
         fmt: Format = format_option(),
         prefect: bool = typer.Option(False, "--prefect", help="Add Prefect's own state of each run (asks the "
                                      "Prefect API: slower, starts Chronicle's local server if none is set)."),
         home: str | None = HomeOpt) -> None:
    """Every recent flow run — completed, failed, refused, crashed — from DuckDB (pipeline_runs), with what it
    did and why it ended. A run whose process was killed shows as CRASHED. No Prefect API needed."""
    settings = read_settings(home)
    from chronicle.services.run_history import list_runs
    from chronicle.storage.db import read
    from chronicle.storage.pipeline_runs import flow_names

    rows = list_runs(settings, limit, flow)
    if flow and not rows:
        names = read(settings, flow_names)
        if names:  # runs exist, none of a flow by that name: a typo, not an empty history
            fail(f"no flow is named like {flow!r}; flows with runs: {', '.join(names)}")
    states = prefect_states([r.flow_run_id for r in rows]) if prefect and rows else {}
    if fmt is Format.table:
        table = [r.table_row() | ({"Prefect": states.get(r.flow_run_id, "—")} if prefect else {}) for r in rows]
        emit(table, title="flow runs, newest first (pipeline_runs)", empty="no runs recorded yet")
    else:
        emit([r.as_dict() | ({"prefect_state": states.get(r.flow_run_id)} if prefect else {}) for r in rows], fmt,
             columns=None)


def snapshot(home: str | None = HomeOpt) -> None:
    """Publish the analysts' read-only copy of the database now (flows do it after every write)."""
    settings = settings_from_options(home)
    from chronicle.storage.snapshot import SnapshotNotWritten, publish_snapshot

    try:
        info = publish_snapshot(settings)
    except SnapshotNotWritten as exc:
        fail(f"the snapshot was not published ({exc}); the database is whole: free space (or the path), run it again")
    if info is None:
        console.print("lake topology: analysts attach the live lake, no snapshot needed "
                      "(`duckdb -cmd \"$(chronicle sql --print-attach)\"`)")
        return
    if info.compacted is not None:
        c = info.compacted
        console.print(f"compacted the database first: {c.extra_row_groups} surplus row groups, "
                      f"{c.bytes_before / 1e6:.1f} -> {c.bytes_after / 1e6:.1f} MB in {c.seconds:.2f}s")
    console.print(f"snapshot {info.path} ({info.tables} tables, {info.bytes / 1e6:.1f} MB) in {info.seconds:.2f}s")
    console.print(f"query it while flows run:  duckdb -readonly {info.path}")


def register(app: typer.Typer) -> None:
    register_server(app)
    for command in (serve, setup, deploy_check, runs, snapshot):  # deploy_check: `deploy-check` (Typer's naming)
        app.command()(command)


def server_status() -> None:
    """Which Prefect API commands use, and the background server's pid, URL and files."""
    from chronicle.deployments import local_api

    configured = local_api.configured_url()
    if configured:
        answer = "answers" if local_api.healthy(configured) else "does NOT answer"
        console.print(f"PREFECT_API_URL is set: commands use {configured} ({answer}); no background server")
    state = local_api.running()
    if state:
        console.print(f"background server: pid {state.pid}, API {state.url}, UI {state.ui}")
    else:
        console.print("background server: not running (the next flow command starts it)")
    console.print(f"state file: {local_api.state_dir() / 'server.json'}; log: {local_api.log_file()}")
    from chronicle.cli import launch

    warm = launch.status()
    console.print(f"warm command runner: pid {warm['pid']}, ready in {warm.get('warmup_s')}s" if warm else
                  "warm command runner: not running (the next flow command starts it; CHRONICLE_WARM=0 "
                  "disables it)")


def server_start() -> None:
    """Start the background server now (flow commands start it on first use anyway)."""
    api = common.ensure_api()
    console.print(f"Prefect API: {api.url} ({api.source})")


def server_stop() -> None:
    """Stop the background server and the warm command runner (the next flow command starts them again;
    the server's database stays in $PREFECT_HOME)."""
    from chronicle.cli import launch
    from chronicle.deployments import local_api

    warm = launch.stop()
    console.print(f"stopped the warm command runner (pid {warm['pid']})" if warm else "no warm command runner")
    state = local_api.stop()
    console.print(f"stopped the background server (pid {state.pid})" if state else "no background server running")


def register_server(app: typer.Typer) -> None:
    server = typer.Typer(help="Chronicle's background Prefect server (used when PREFECT_API_URL is not set).",
                         no_args_is_help=True)
    for name, command in (("status", server_status), ("start", server_start), ("stop", server_stop)):
        server.command(name)(command)
    app.add_typer(server, name="server")

"""Beyond one machine, the path exercised here: the backfill's per-week fan-out on a Dask cluster of processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deployments.conftest import query, write_jsonl

prefect_dask = pytest.importorskip(
    "prefect_dask", reason="prefect-dask is not installed: `pip install -e '.[dask]'` (see docs/deploy.md)")


@pytest.mark.slow
def test_backfill_fans_out_on_a_local_dask_cluster(home: Path, tmp_path: Path, api_url: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.ingest_logs import ingest_logs

    write_jsonl(tmp_path / "logs" / "a.jsonl", "ALPHA", 60, "a")
    write_jsonl(tmp_path / "logs" / "b.jsonl", "BETA", 60, "b")
    ingest_logs([str(tmp_path / "logs")])
    # Dask workers are fresh processes: they learn CHRONICLE_HOME and the API from the environment only.
    monkeypatch.setenv("PREFECT_API_URL", api_url)
    # One week per task run (weeks are grouped by default): six tasks for the cluster's two workers to share.
    monkeypatch.setenv("CHRONICLE_WEEKS_PER_TASK", "1")

    from distributed import Client, LocalCluster, get_task_stream

    with (LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
          Client(cluster) as client, get_task_stream(client) as stream):
        runner = prefect_dask.DaskTaskRunner(address=cluster.scheduler_address)
        backfill_weeks.with_options(task_runner=runner)(project_id="all", start_week="2026-W01",
                                                        end_week="2026-W03")
        worker_addresses = set(cluster.scheduler_info["workers"])

    db = home / "chronicle.duckdb"
    weeks = {(p, w) for p, w in query(db, "SELECT project_id, week_number FROM weekly_reports")}
    assert weeks >= {(p, w) for p in ("ALPHA", "BETA") for w in (202601, 202602, 202603)}
    # The per-week tasks really ran in the cluster's worker processes (which wrote DuckDB under the file lock).
    ran_on = {t["worker"] for t in stream.data}
    assert len(stream.data) >= 6 and ran_on and ran_on <= worker_addresses, stream.data

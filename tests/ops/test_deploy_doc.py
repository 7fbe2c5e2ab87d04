"""Every command of docs/deploy.md, in order, as written (scripts/deploy_doc.py): part `local` — the Chronicle
setup, `chronicle serve`, an own Prefect server on another port with PREFECT_UI_API_URL, the work pool,
`prefect deploy --all`, a named worker, the run history and the snapshot; part `lake` — the Docker and
Kubernetes pools, the lake topology on a real PostgreSQL and S3 (moto), and the many-workers bring-up: the
databases, max_connections with a restart, the Prefect server on PostgreSQL, a named worker and a backfill
watched to its end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lake import servers

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _env(tmp_path: Path, api_url: str) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHRONICLE_", "PREFECT_", "AWS_", "PG"))}
    env.update(PATH=os.pathsep.join([bin_dir, env.get("PATH", "")]), PREFECT_API_URL=api_url,
               PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               CHRONICLE_WARM="0", PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return env


def _run(args: list[str], tmp_path: Path, env: dict[str, str]) -> str:
    logs = lambda: "\n".join(f"--- {p.name}\n{p.read_text()[-1500:]}"  # noqa: E731
                             for p in sorted((tmp_path / "work" / "logs").glob("*")))
    try:
        done = subprocess.run([sys.executable, "-m", "scripts.deploy_doc", "--run", str(tmp_path / "work"), *args],
                              env=env, cwd=REPO, capture_output=True, text=True, timeout=1100)
    except subprocess.TimeoutExpired as exc:  # say which command hung
        pytest.fail(f"timed out: {(exc.stdout or b'')[-4000:]!r}\n{logs()}")
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}\n{logs()}"
    assert ">>> all commands ran" in done.stdout
    return done.stdout


@pytest.mark.timeout(1200)
def test_deploy_doc_one_machine_commands_run_as_written(tmp_path: Path, api_url: str) -> None:
    _run([], tmp_path, _env(tmp_path, api_url))


@pytest.mark.timeout(1200)
def test_deploy_doc_lake_and_many_workers_commands_run_as_written(tmp_path: Path, api_url: str) -> None:
    # PostgreSQL without a max_connections on its command line: the document's ALTER SYSTEM + restart must take.
    with servers.postgres_server(max_connections=None) as pg, servers.moto_server("chronicle-data") as s3:
        env = {**_env(tmp_path, api_url), "CHRONICLE_HOME": str(tmp_path / "admin-home")}
        out = _run(["--part", "lake", "--pg-port", str(pg.port), "--pg-data", str(pg.data_dir), "--s3", s3.endpoint],
                   tmp_path, env)
        shown = subprocess.run(["psql", "-h", pg.host, "-p", str(pg.port), "-U", "postgres", "-Atc",
                                "SHOW max_connections"], capture_output=True, text=True, timeout=60)
        assert shown.stdout.strip() == "300", shown.stderr
        # The backfill ran on the worker against the lake, and finished Completed (`--watch` exits 1 otherwise).
        assert "Flow run finished successfully in 'Completed'" in out, out[-3000:]
        keys = s3.client().list_objects_v2(Bucket="chronicle-data", Prefix="prod/ducklake/").get("KeyCount", 0)
        assert keys > 0

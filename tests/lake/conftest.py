"""A real PostgreSQL 15 and a real S3-compatible server (moto) on 127.0.0.1, started once per session.

They FAIL the tests (never skip them) when they cannot start: the lake topology is only shown to work
against the real parts. `initdb` refuses to run as root (CI runs as root), so the server runs as the
`postgres` system user from a temporary folder it owns, on a free port, with its socket in that folder.
Each test gets its own database and bucket prefix: `lake_env` (variables for child processes) and
`lake_settings` (this process).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

BUCKET = "chronicle-test"
START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_postgres(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        pytest.fail("running as root but `runuser` is missing: cannot start PostgreSQL as the postgres user")
    return [runuser, "-u", "postgres", "--", *cmd]


def _pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        initdb = shutil.which("initdb")
        if initdb is not None:  # createdb, pg_isready live next to the real initdb
            candidate = Path(initdb).resolve().parent / name
            if candidate.exists():
                return str(candidate)
        pytest.fail(f"`{name}` is not installed: the lake tests need a PostgreSQL server (initdb, pg_ctl)")
    return found


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int

    def conninfo(self, dbname: str) -> str:
        return f"host={self.host} port={self.port} user=postgres dbname={dbname}"

    def create_database(self, name: str) -> None:
        subprocess.run([_pg_bin("createdb"), "-h", self.host, "-p", str(self.port), "-U", "postgres", name],
                       check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    folder = Path(tempfile.mkdtemp(prefix="chronicle-pg-"))
    data, port = folder / "data", free_port()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    init = subprocess.run(_as_postgres([_pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                                        "-E", "UTF8", "--no-sync"]), capture_output=True, text=True)
    if init.returncode != 0:
        pytest.fail(f"initdb failed: {init.stderr or init.stdout}")
    opts = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300"
    start = subprocess.run(_as_postgres([_pg_bin("pg_ctl"), "-D", str(data), "-o", opts, "-l", str(folder / "pg.log"),
                                         "-w", "-t", str(int(START_TIMEOUT_S)), "start"]),
                           capture_output=True, text=True)
    if start.returncode != 0:
        log = (folder / "pg.log").read_text() if (folder / "pg.log").exists() else ""
        pytest.fail(f"PostgreSQL did not start: {start.stderr or start.stdout}\n{log[-2000:]}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while subprocess.run([_pg_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(port)],
                         capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            pytest.fail("PostgreSQL started but never accepted connections")
        time.sleep(0.05)
    try:
        yield Postgres("127.0.0.1", port)
    finally:
        subprocess.run(_as_postgres([_pg_bin("pg_ctl"), "-D", str(data), "stop", "-m", "immediate"]),
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class S3:
    endpoint: str

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                            aws_secret_access_key="testing-secret", region_name="us-east-1")


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    """moto in server mode in its own process (no GIL shared with the tests), one bucket for everyone."""
    port = free_port()
    # Its request log goes to a file: a pipe nobody reads would fill up and stall the server.
    log = tempfile.NamedTemporaryFile(prefix="chronicle-moto-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"moto server exited: {Path(log.name).read_text()[-2000:]}")
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail("moto server did not listen in time")
            time.sleep(0.05)
    server = S3(f"http://127.0.0.1:{port}")
    server.client().create_bucket(Bucket=BUCKET)
    try:
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        Path(log.name).unlink(missing_ok=True)


@pytest.fixture()
def lake_env(postgres: Postgres, s3: S3) -> dict[str, str]:
    """Environment of one lake: its own catalog database and its own prefix in the shared bucket."""
    name = f"lake_{uuid.uuid4().hex[:10]}"
    postgres.create_database(name)
    return {"CHRONICLE_CATALOG": f"ducklake:postgres:{postgres.conninfo(name)}",
            "CHRONICLE_DATA_PATH": f"s3://{BUCKET}/{name}",
            "AWS_ENDPOINT_URL": s3.endpoint, "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_REGION": "us-east-1"}


@pytest.fixture()
def lake_settings(home: Path, lake_env: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    """Settings of this process pointed at a fresh lake (the flows' `load_settings()` sees it too)."""
    from chronicle.settings import load_settings
    from storage import lake

    for key, value in lake_env.items():
        monkeypatch.setenv(key, value)
    yield load_settings()
    lake.close_sessions()

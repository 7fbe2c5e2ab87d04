"""The lake topology's servers as plain processes: PostgreSQL 15, moto (S3), a Prefect server on PostgreSQL
and Prefect process workers, all on 127.0.0.1.

Used by the test fixtures (tests/lake/conftest.py, which turn a `ServerError` into a FAILED test, never a
skip) and by `bench/scale.py`. Every start waits for an event (the port answers, a log line appears),
never for a fixed time. `initdb` refuses to run as root (CI runs as root), so PostgreSQL runs as the
`postgres` system user from a temporary folder it owns.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 120.0
BUCKET = "chronicle-test"
S3_KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_REGION": "us-east-1"}
BIN = Path(sys.executable).parent


class ServerError(RuntimeError):
    """A server the lake tests need could not be started (the tests FAIL on it)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(ready: Callable[[], bool], proc: subprocess.Popen | None, what: str, missing: str, log: Path | None,
              timeout: float = START_TIMEOUT_S, pause: float = 0.05) -> None:
    """Poll `ready()` until true; fail at once if `proc` exits, or with "`what` `missing` within …" at the deadline."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc is not None and proc.poll() is not None:
            raise ServerError(f"{what} exited with {proc.returncode}: {_tail(log)}")
        if time.monotonic() > deadline:
            raise ServerError(f"{what} {missing} within {timeout:.0f}s: {_tail(log)}")
        time.sleep(pause)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _wait_port(port: int, proc: subprocess.Popen | None, what: str, log: Path | None,
               timeout: float = START_TIMEOUT_S) -> None:
    _wait_for(lambda: _listening(port), proc, what, f"did not listen on port {port}", log, timeout)


def _tail(log: Path | None, n: int = 3000) -> str:
    return log.read_text(errors="replace")[-n:] if log is not None and log.exists() else ""


def _stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


# --- PostgreSQL -------------------------------------------------------------------------------
def _as_postgres(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        raise ServerError("running as root but `runuser` is missing: cannot start PostgreSQL as the postgres user")
    return [runuser, "-u", "postgres", "--", *cmd]


def pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        initdb = shutil.which("initdb")
        if initdb is not None:  # createdb, pg_isready live next to the real initdb
            candidate = Path(initdb).resolve().parent / name
            if candidate.exists():
                return str(candidate)
        raise ServerError(f"`{name}` is not installed: the lake tests need a PostgreSQL server (initdb, pg_ctl)")
    return found


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    data_dir: Path | None = None

    def pid(self) -> int | None:
        """The postmaster's process id (its first line of postmaster.pid), for CPU accounting."""
        pidfile = self.data_dir / "postmaster.pid" if self.data_dir else None
        return int(pidfile.read_text().split()[0]) if pidfile and pidfile.exists() else None

    def conninfo(self, dbname: str) -> str:
        return f"host={self.host} port={self.port} user=postgres dbname={dbname}"

    def sqlalchemy_url(self, dbname: str) -> str:
        """What `PREFECT_API_DATABASE_CONNECTION_URL` takes (asyncpg driver; trust authentication here)."""
        return f"postgresql+asyncpg://postgres@{self.host}:{self.port}/{dbname}"

    def create_database(self, name: str) -> None:
        done = subprocess.run([pg_bin("createdb"), "-h", self.host, "-p", str(self.port), "-U", "postgres", name],
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise ServerError(f"createdb {name} failed: {done.stderr}")


@contextmanager
def postgres_server(max_connections: int | None = 300) -> Iterator[Postgres]:
    """A throw-away PostgreSQL; `max_connections=None` leaves it to the configuration files (so that an
    `ALTER SYSTEM SET max_connections` takes effect at a restart, as docs/deploy.md does it)."""
    folder = Path(tempfile.mkdtemp(prefix="chronicle-pg-"))
    data, port, log = folder / "data", free_port(), folder / "pg.log"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    init = subprocess.run(_as_postgres([pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                                        "-E", "UTF8", "--no-sync"]), capture_output=True, text=True)
    if init.returncode != 0:
        raise ServerError(f"initdb failed: {init.stderr or init.stdout}")
    opts = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
    if max_connections is not None:
        opts += f" -c max_connections={max_connections}"
    start = subprocess.run(_as_postgres([pg_bin("pg_ctl"), "-D", str(data), "-o", opts, "-l", str(log), "-w",
                                         "-t", str(int(START_TIMEOUT_S)), "start"]), capture_output=True, text=True)
    if start.returncode != 0:
        raise ServerError(f"PostgreSQL did not start: {start.stderr or start.stdout}\n{_tail(log, 2000)}")
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while subprocess.run([pg_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(port)],
                             capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                raise ServerError("PostgreSQL started but never accepted connections")
            time.sleep(0.05)
        yield Postgres("127.0.0.1", port, data)
    finally:
        subprocess.run(_as_postgres([pg_bin("pg_ctl"), "-D", str(data), "stop", "-m", "immediate"]),
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


# --- S3 (moto) --------------------------------------------------------------------------------
@dataclass(frozen=True)
class S3:
    endpoint: str
    pid: int | None = None

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=S3_KEYS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=S3_KEYS["AWS_SECRET_ACCESS_KEY"],
                            region_name=S3_KEYS["AWS_REGION"])


@contextmanager
def moto_server(bucket: str = BUCKET) -> Iterator[S3]:
    """moto in server mode in its own process (no GIL shared with the caller), with one bucket."""
    port = free_port()
    # Its request log goes to a file: a pipe nobody reads would fill up and stall the server.
    log = Path(tempfile.mkstemp(prefix="chronicle-moto-", suffix=".log")[1])
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc, "moto server", log)
        server = S3(f"http://127.0.0.1:{port}", proc.pid)
        server.client().create_bucket(Bucket=bucket)
        yield server
    finally:
        _stop(proc)
        log.unlink(missing_ok=True)


def lake_env(pg: Postgres, s3: S3, dbname: str, bucket: str = BUCKET) -> dict[str, str]:
    """The variables of one lake: catalog database `dbname` (created here) and the prefix `dbname` in the bucket."""
    pg.create_database(dbname)
    return {"CHRONICLE_CATALOG": f"ducklake:postgres:{pg.conninfo(dbname)}",
            "CHRONICLE_DATA_PATH": f"s3://{bucket}/{dbname}", "AWS_ENDPOINT_URL": s3.endpoint, **S3_KEYS}


# --- Prefect server on PostgreSQL, and process workers ----------------------------------------
def prefect_env(**extra: str) -> dict[str, str]:
    """A child's environment for Prefect processes: quiet, no telemetry, this checkout first on the path."""
    repo = str(Path(__file__).resolve().parents[2])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHRONICLE_", "PREFECT_"))}
    env.update({"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1",
                "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))})
    env.update(extra)
    return env


@dataclass
class PrefectServer:
    api_url: str
    database_url: str
    proc: subprocess.Popen
    log: Path

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.api_url}/health", timeout=5) as resp:
                return resp.status == 200
        except OSError:
            return False


@contextmanager
def prefect_server(pg: Postgres, dbname: str, folder: Path, **settings: str) -> Iterator[PrefectServer]:
    """`prefect server start` with its database in PostgreSQL (`PREFECT_API_DATABASE_CONNECTION_URL`), and any
    other `PREFECT_*` `settings` of the server."""
    pg.create_database(dbname)
    port, log = free_port(), folder / "prefect-server.log"
    url = pg.sqlalchemy_url(dbname)
    env = prefect_env(PREFECT_API_DATABASE_CONNECTION_URL=url, PREFECT_HOME=str(folder / "prefect-home"),
                      PREFECT_UI_ENABLED="false", PREFECT_LOGGING_LEVEL="WARNING",
                      PREFECT_SERVER_API_HOST="127.0.0.1", PREFECT_SERVER_API_PORT=str(port), **settings)
    folder.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        proc = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                                env=env, cwd=folder, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = PrefectServer(f"http://127.0.0.1:{port}/api", url, proc, log)
    try:
        _wait_for(server.healthy, proc, "prefect server", "did not answer", log, pause=0.1)
        yield server
    finally:
        _stop(proc)


@dataclass
class Worker:
    """One `prefect worker start` process (its own working folder); its flow runs are its subprocesses."""

    name: str
    folder: Path
    proc: subprocess.Popen
    log: Path
    submitted: list[str] = field(default_factory=list)

    def text(self) -> str:
        return _tail(self.log, 10**9)

    def wait_started(self) -> None:
        """Return once the worker says it has started; fail at once if it exits first."""
        _wait_for(lambda: "started!" in self.text(), self.proc, f"worker {self.name}", "did not start", self.log,
                  pause=0.1)

    def kill(self) -> None:
        """kill -9 of the worker AND its flow-run subprocesses (its process group): a host that dies."""
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        """A teardown's stop: SIGTERM to the worker's process group, kill -9 of it if the worker has not exited a
        few seconds later (a worker exits within seconds, docs/operating.md: one that does not is not waited for)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=STOP_WAIT_S)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()


# How a worker is started by a terminal, systemd or docker compose: with SIGINT at its default. Prefect's worker
# stops on SIGTERM by sending itself SIGINT, so with SIGINT ignored — what a shell without job control gives its
# background commands, e.g. a test run started with `cmd &` — a SIGTERM does nothing (docs/operating.md).
_WITH_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, signal.{}); os.execv(sys.argv[1], sys.argv[1:])"
STOP_WAIT_S = 10.0


def with_sigint(cmd: list[str], disposition: str = "SIG_DFL") -> list[str]:
    """`cmd` started with SIGINT set to `disposition` (`SIG_DFL`, `SIG_IGN`) whatever this process inherited
    (exec: the same pid)."""
    return [sys.executable, "-S", "-c", _WITH_SIGINT.format(disposition), *cmd]


def start_worker(name: str, folder: Path, env: dict[str, str], pool: str = "chronicle-process",
                 limit: int | None = None, queues: tuple[str, ...] = (), wait: bool = True) -> Worker:
    """A process worker polling `pool` (its `queues`, else all) every second; returns once it has started (with
    `wait=False` at once: `Worker.wait_started`, so that several workers start side by side)."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "worker.log"
    cmd = [str(BIN / "prefect"), "worker", "start", "--pool", pool, "--name", name, "--type", "process"]
    if limit:
        cmd += ["--limit", str(limit)]
    for queue in queues:
        cmd += ["--work-queue", queue]
    env = {**env, "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_WORKER_PREFETCH_SECONDS": "1",
           "PREFECT_LOGGING_LEVEL": env.get("PREFECT_LOGGING_LEVEL", "INFO")}
    with log.open("w") as out:
        proc = subprocess.Popen(with_sigint(cmd), env=env, cwd=folder, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # its own process group: kill() takes its runs too
    worker = Worker(name, folder, proc, log)
    if wait:
        worker.wait_started()
    return worker


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) of a process tree so far, including children it has already reaped
    (a worker's finished flow runs, PostgreSQL's ended backends)."""
    import psutil

    if pid is None:
        return 0.0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def deploy_all(env: dict[str, str], repo: Path, timeout: float = 600,
               meanwhile: Callable[[], None] | None = None, deploy: bool = True) -> None:
    """What a data engineer runs once: `chronicle setup` (work pool, limits, lake) then `prefect deploy --all`
    from the checkout (the deployments' working folder). `meanwhile` is called while the deploy runs, once the
    work pool exists (to start workers side by side with it). `deploy=False`: `chronicle setup` only, for a server
    that already has the deployments (prefect.yaml is the same file, so a second deploy changes nothing)."""
    setup = subprocess.run([str(BIN / "chronicle"), "setup"], env=env, cwd=repo, capture_output=True, text=True,
                           timeout=timeout)
    if setup.returncode != 0:
        raise ServerError(f"chronicle setup failed: {setup.stdout[-2000:]} {setup.stderr[-2000:]}")
    if not deploy:
        if meanwhile is not None:
            meanwhile()
        return
    # Its output to a file: a pipe nobody reads while `meanwhile` runs could fill up and stall it.
    with tempfile.TemporaryFile("w+") as out:
        deploying = subprocess.Popen([str(BIN / "prefect"), "--no-prompt", "deploy", "--all"], env=env, cwd=repo,
                                     stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            if meanwhile is not None:
                meanwhile()
            deploying.wait(timeout=timeout)
        finally:
            if deploying.poll() is None:
                deploying.kill()
                deploying.wait()
        if deploying.returncode != 0:
            out.seek(0)
            raise ServerError(f"deploy --all failed: {out.read()[-4000:]}")
    pause_schedules(env)


_PAUSE = """
from prefect.client.orchestration import get_client
with get_client(sync_client=True) as client:
    for deployment in client.read_deployments():
        if deployment.schedules:
            client.pause_deployment(deployment.id)
"""


def pause_schedules(env: dict[str, str], timeout: float = 120) -> None:
    """Pause the deployments that have a schedule. A test's workers take what it runs, not the Monday job or the
    distill that falls due while it runs: prefect.yaml's schedules are wall-clock times (Sunday 18:00 UTC, every
    third day at 19:00 UTC), and a scheduled run taken by a test's worker left the spread with no free worker."""
    done = subprocess.run([sys.executable, "-c", _PAUSE], env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise ServerError(f"pausing the scheduled deployments failed: {done.stderr[-2000:]}")

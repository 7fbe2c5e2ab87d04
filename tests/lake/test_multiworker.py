"""The lake end to end: a pipeline run equal to an embedded one, time travel from docs/analysts.md in the
real `duckdb` shell, and two worker PROCESSES (separate working folders, sharing only PostgreSQL and the
S3 endpoint) writing the same input at once, one killed with -9 and rerun, an analyst reading throughout."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import pytest

from tests.lake.helpers import WAIT_FOR_GO, child_env, start_together

DOC = Path(__file__).resolve().parents[2] / "docs" / "analysts.md"
LOG_FILES = ("2025-05.jsonl", "2025-06.jsonl", "2025-07.jsonl", "2025-08.jsonl")
NOTE_FILES = ("2026-03-31.md", "2026-04-02.md", "2026-04-03.md", "2026-04-04.md")
DISTILL = {"days": 14, "until": date(2026, 4, 4)}
TABLES = ("raw_logs", "rejects", "ingest_files", "weekly_reports", "weekly_report_versions", "pipeline_runs",
          "llm_calls", "memory_events", "distill_chunks", "distill_quarantine")


@pytest.fixture()
def inputs(sample_dir: Path, tmp_path: Path) -> Path:
    """A small slice of the sample: 4 months of one trial project and 4 days of an assistant's notes."""
    root = tmp_path / "input"
    (root / "logs").mkdir(parents=True)
    (root / "memory").mkdir()
    for name in LOG_FILES:
        shutil.copy(sample_dir / "logs" / "XH201" / name, root / "logs" / name)
    for name in NOTE_FILES:
        shutil.copy(sample_dir / "memory" / name, root / "memory" / name)
    return root


def duckdb_cli() -> str:
    path = Path(sys.executable).with_name("duckdb")
    found = str(path) if path.exists() else shutil.which("duckdb")
    if not found:
        pytest.fail("the `duckdb` shell (package duckdb-cli) is not installed")
    return found


def _use(monkeypatch: pytest.MonkeyPatch, home: Path, env: dict[str, str]):
    from chronicle.settings import load_settings

    for key in ("CHRONICLE_CATALOG", "CHRONICLE_DATA_PATH"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CHRONICLE_HOME", str(home))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load_settings()  # what the flows read at their start


def _rows(settings, sql: str) -> list[tuple]:
    from chronicle.storage.db import connect

    with connect(settings) as conn:
        return conn.execute(sql).fetchall()


def state(settings, *, memories: bool = True) -> dict:
    """What must be equal between topologies: rows per table, report texts, views, memories."""
    out = {
        "counts": {t: _rows(settings, f"SELECT count(*) FROM {t}")[0][0] for t in TABLES},
        "raw_logs": _rows(settings, "SELECT entry_id, project_id, ts, week_number, type, content "
                                    "FROM raw_logs ORDER BY entry_id"),
        "files": _rows(settings, "SELECT path, entries, rejects FROM ingest_files ORDER BY path"),
        "reports": _rows(settings, "SELECT project_id, week_number, summary, stats::VARCHAR, model, status, "
                                   "input_hash, entry_count FROM weekly_reports ORDER BY 1, 2"),
        "weekly_stats": _rows(settings, "SELECT * FROM weekly_stats ORDER BY project_id, week_number"),
        "chronicle": _rows(settings, "SELECT project_id, week_number, summary FROM chronicle ORDER BY 1, 2"),
    }
    if memories:
        from chronicle.storage.memory.store import MemoryStore

        out["memory_events"] = _rows(settings, "SELECT event, content_hash, target_file, importance, reason "
                                               "FROM memory_events ORDER BY ALL")
        out["memory_stats"] = _rows(settings, "SELECT * FROM memory_stats ORDER BY ALL")
        out["memories"] = MemoryStore(settings).count()
    return out


def run_shell(attach: str, sql: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([duckdb_cli(), "-csv", "-cmd", attach], input=sql, capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)
    assert done.returncode == 0 and "Error" not in done.stderr, done.stderr
    return done.stdout


def shell_env(lake_env: dict[str, str]) -> dict[str, str]:
    # An analyst's shell: the standard AWS variables, nothing of Chronicle's.
    return {**{k: v for k, v in os.environ.items() if not k.startswith("CHRONICLE_")},
            **{k: v for k, v in lake_env.items() if k.startswith("AWS_")}}


def test_lake_pipeline_equals_embedded_and_time_travel_works(home: Path, lake_env: dict[str, str], inputs: Path,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from chronicle.cli.main import app
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.storage import lake

    results = {}
    for name, env in (("embedded", {}), ("lake", lake_env)):
        settings = _use(monkeypatch, tmp_path / name, env)
        ingest_logs([str(inputs)])
        backfill_weeks()
        distill_memory(**DISTILL)
        results[name] = state(settings)
    assert results["embedded"]["counts"]["weekly_reports"] > 15 and results["embedded"]["memories"] > 0
    assert results["lake"] == results["embedded"]
    # The LanceDB table lives under CHRONICLE_DATA_PATH on the object store, not in the working folder.
    assert settings.lance_uri == f"{lake_env['CHRONICLE_DATA_PATH']}/lancedb"
    assert not (tmp_path / "lake" / "lancedb").exists()

    # The analyst's one line, in the real duckdb shell; then every lake example of docs/analysts.md.
    printed = CliRunner().invoke(app, ["sql", "--print-attach"])
    assert printed.exit_code == 0, printed.output
    attach = printed.output.strip()
    assert "testing-secret" not in attach and lake.LAKE in attach
    blocks = re.findall(r"```sql lake\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 3
    env = shell_env(lake_env)
    commits = run_shell(attach, blocks[0], tmp_path, env)
    for flow in ("ingest-logs", "backfill-weeks", "distill-memory"):
        assert f",{flow}," in commits, commits  # every flow's commits name the flow and its run
    as_of_run = list(csv.reader(io.StringIO(run_shell(attach, blocks[1], tmp_path, env))))
    assert as_of_run[0] == ["project_id", "week_number", "status", "summary"]
    # The reports as that run left them (the distillation after it wrote none).
    assert [(p, int(w), st, text) for p, w, st, text in as_of_run[1:]] == [
        (r[0], r[1], r[5], r[2]) for r in results["lake"]["reports"]]
    as_of_ingest = run_shell(attach, blocks[2], tmp_path, env).strip().splitlines()
    assert as_of_ingest[-1] == f"{results['lake']['counts']['raw_logs']},0"  # ingested, nothing reported yet
    live = run_shell(attach, "SELECT count(*) FROM weekly_stats;", tmp_path, env).strip().splitlines()
    assert int(live[-1]) == len(results["lake"]["weekly_stats"])


WORKER = WAIT_FOR_GO + """
from chronicle.flows.backfill_weeks import backfill_weeks
from chronicle.flows.ingest_logs import ingest_logs
ingest_logs([sys.argv[2]])
print("BACKFILL", flush=True)
wait_for(sys.argv[3])  # both backfills start together, when the test says so
backfill_weeks()
print("DONE", flush=True)
"""

ANALYST_QUERY = ("SELECT 'q{n}', (SELECT count(*) - count(DISTINCT entry_id) FROM raw_logs), "
                 "(SELECT count(*) - count(DISTINCT (project_id, week_number)) FROM weekly_reports), "
                 "(SELECT count(*) FROM weekly_stats);\n")


class Analyst:
    """One `duckdb` shell session held open over the whole run, querying the live lake again and again."""

    def __init__(self, attach: str, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([duckdb_cli(), "-csv", "-noheader", "-cmd", attach], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        assert self.proc.stdin is not None
        while not self._stop.wait(0.25):  # pacing of the analyst's queries, not a synchronisation
            self.proc.stdin.write(ANALYST_QUERY.format(n=self.sent))
            self.proc.stdin.flush()
            self.sent += 1

    def finish(self) -> tuple[list[str], str]:
        self._stop.set()
        self._thread.join()
        out, err = self.proc.communicate(timeout=120)
        return out.strip().splitlines(), err


def test_two_workers_one_killed_then_rerun_while_an_analyst_reads(home: Path, lake_env: dict[str, str],
                                                                 inputs: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.settings import PREFECT_API_URL

    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.storage.analytics import shell_attach_sql

    reference = _use(monkeypatch, tmp_path / "reference", {})
    ingest_logs([str(inputs)])
    backfill_weeks()
    expected = state(reference, memories=False)
    lake_settings = _use(monkeypatch, tmp_path / "unused", lake_env)

    api = {"PREFECT_API_URL": str(PREFECT_API_URL.value())}
    envs = [child_env(tmp_path / f"worker-{w}", {**lake_env, **api}) for w in "ab"]
    for env in envs:
        Path(env["CHRONICLE_HOME"]).mkdir()
    _rows(lake_settings, "SELECT 1")  # the catalog exists before the analyst attaches
    analyst = Analyst(shell_attach_sql(lake_settings), tmp_path, shell_env(lake_env))
    go_backfill = tmp_path / "go-backfill"
    args = [str(inputs), str(go_backfill)]
    a, b = start_together(WORKER, [args, args], envs, tmp_path / "go", tmp_path)
    for proc in (a, b):  # both ingested (at once); neither has begun its backfill
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "BACKFILL", proc.stderr.read() if proc.stderr else ""
    # Without this second start line, a could write every week while b still waits for a's ingest claims:
    # b then has nothing left to write, no report lands after it starts, and there is no "middle" to kill in.
    assert _rows(lake_settings, "SELECT count(*) FROM weekly_report_versions") == [(0,)]
    go_backfill.write_text("go")
    # Kill worker b in the middle of its backfill: once the first report lands (b cannot have finished: its
    # flow ends after every week is written, then records its run).
    deadline = time.monotonic() + 120
    while _rows(lake_settings, "SELECT count(*) FROM weekly_report_versions")[0][0] == 0:
        assert time.monotonic() < deadline and b.poll() is None, "no report was written, or b ended"
        time.sleep(0.02)
    os.kill(b.pid, signal.SIGKILL)
    assert b.wait(timeout=60) == -signal.SIGKILL
    out_a, err_a = a.communicate(timeout=300)
    assert a.returncode == 0 and out_a.strip().endswith("DONE"), err_a[-3000:]
    rerun = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path / "go"), *args], env=envs[1],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    lines, err = analyst.finish()

    got = state(lake_settings, memories=False)
    for key in ("raw_logs", "files", "reports", "weekly_stats", "chronicle"):
        assert got[key] == expected[key], key
    for table in ("raw_logs", "rejects", "ingest_files", "weekly_reports"):
        assert got["counts"][table] == expected["counts"][table], table
    # Versions: never two rows for one (week, version); the newest version of a week is its report.
    assert _rows(lake_settings, "SELECT project_id, week_number, version FROM weekly_report_versions "
                                "GROUP BY ALL HAVING count(*) > 1") == []
    assert _rows(lake_settings, """SELECT count(*) FROM weekly_reports r JOIN weekly_report_versions v
                                   USING (project_id, week_number, version) WHERE r.summary = v.summary""") == [
        (expected["counts"]["weekly_reports"],)]
    runs = _rows(lake_settings, "SELECT flow_run_id, count(*) FROM pipeline_runs GROUP BY 1 HAVING count(*) > 1")
    assert runs == []
    # The analyst: every query answered, none failed, and never a duplicate visible mid-run.
    assert "Error" not in err, err
    assert analyst.sent >= 3 and len(lines) == analyst.sent, (analyst.sent, lines[-3:], err)
    answers = [line.split(",") for line in lines]
    assert all(dup_logs == "0" and dup_reports == "0" for _q, dup_logs, dup_reports, _n in answers), lines
    assert int(answers[-1][3]) == len(expected["weekly_stats"])
    print(json.dumps({"analyst_queries": analyst.sent}))


REPLY = "## 本周要点\n\n- 项目按计划推进，详见流水账 [E1]。\n"


class Pool:
    """The deployed topology of one test: a lake with the sample slice ingested, the deployments registered on
    the session's Prefect server (database: PostgreSQL), the fake model, and two process workers."""

    def __init__(self, settings, weeks_with_entries: set[int], llm, workers: list, api_url: str,
                 held: set[int], gate: threading.Event) -> None:
        self.settings, self.with_entries, self.llm, self.workers, self.api_url = (
            settings, weeks_with_entries, llm, workers, api_url)
        self.held, self.gate = held, gate
        """The model's answer for a week in `held` waits until `gate` is set (open unless a test closes it)."""

    def ran_on(self, name: str) -> list:
        """The workers whose log has the run's own first line (both may try to submit it; one gets it)."""
        return [w for w in self.workers if re.search(rf"Beginning (sub)?flow run '{re.escape(name)}'", w.text())]


_DEPLOYED: set[str] = set()
"""The Prefect servers (API URLs) this process has run `prefect deploy --all` against: the session's server on
PostgreSQL is shared by every pool of this worker (tests/conftest.py ONE_PREFECT_ON_POSTGRES), and the deployments
are the same each time (prefect.yaml); each pool still runs `chronicle setup` for its own lake."""


def _deploy_and_start_workers(base: dict[str, str], lake_env: dict[str, str], worker_env: dict[str, str],
                              tmp_path: Path, stack) -> list:
    """`chronicle setup` + `prefect deploy --all` (once per server), and the pool's two workers started side by
    side while the deployments are made (each stopped by `stack`)."""
    from tests.lake import servers
    from tests.lake.helpers import REPO

    workers = []

    def start_workers() -> None:
        for name in ("worker-a", "worker-b"):
            worker = servers.start_worker(name, tmp_path / name, {**worker_env, "CHRONICLE_HOME": str(tmp_path / name)},
                                          limit=1, wait=False)
            stack.callback(worker.stop)
            workers.append(worker)

    # The zombie-run window `chronicle setup` gives its automation: 40 s instead of 50 s, so that a killed run is
    # shown Crashed sooner (tests/lake/test_dead_runs.py), still well beyond the 30 s between the heartbeats of
    # the runs that live.
    admin = {**base, **lake_env, "CHRONICLE_HOME": str(tmp_path / "admin"), "CHRONICLE_ZOMBIE_AFTER_S": "40"}
    servers.deploy_all(admin, REPO, meanwhile=start_workers, deploy=base["PREFECT_API_URL"] not in _DEPLOYED)
    _DEPLOYED.add(base["PREFECT_API_URL"])
    for worker in workers:
        worker.wait_started()
    return workers


@pytest.fixture()
def pool_env() -> dict[str, str]:
    """Settings of the pool's workers beyond the topology's (a test parametrizes it)."""
    return {}


@pytest.fixture()
def pool(prefect_on_postgres, lake_env: dict[str, str], inputs: Path, tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch, pool_env: dict[str, str]):
    from contextlib import ExitStack

    from prefect.settings import PREFECT_API_URL, temporary_settings

    from chronicle.flows.ingest_logs import ingest_logs
    from tests.conftest import flush_prefect_queues
    from tests.fakellm import FakeLLMServer
    from tests.lake import servers

    settings = _use(monkeypatch, tmp_path / "loader", lake_env)
    ingest_logs([str(inputs / "logs")])
    with_entries = {w for w, in _rows(settings, "SELECT DISTINCT week_number FROM raw_logs")}

    # The model answers nothing until two requests are in flight at once. Each run sends one at a time
    # (max_workers=1), so two in flight means the parent and its child are both writing weeks (an event, not
    # a delay); from then on every request is answered at once.
    # A test may also hold the answers for some weeks (`Pool.held`) until it opens `Pool.gate`.
    both, lock, in_flight = threading.Event(), threading.Lock(), [0]
    held: set[int] = set()
    gate = threading.Event()
    gate.set()

    def responder(request: dict) -> str:
        with lock:
            in_flight[0] += 1
            if in_flight[0] >= 2:
                both.set()
        try:
            both.wait(timeout=300)
            week = re.search(r"week_number (\d+)", json.dumps(request.get("messages"), ensure_ascii=False))
            if week and int(week.group(1)) in held:
                gate.wait(timeout=300)
            return REPLY
        finally:
            with lock:
                in_flight[0] -= 1

    server = prefect_on_postgres
    base = servers.prefect_env(PREFECT_API_URL=server.api_url, PREFECT_LOGGING_LEVEL="INFO")
    with FakeLLMServer() as llm, ExitStack() as stack:
        llm.responder = responder
        worker_env = {**base, **lake_env, "CHRONICLE_BACKFILL_SPREAD": "1", "LLM_URL": llm.base_url,
                      "CHRONICLE_LLM_TIMEOUT_S": "600", **pool_env}
        try:
            workers = _deploy_and_start_workers(base, lake_env, worker_env, tmp_path, stack)
        except servers.ServerError as exc:
            pytest.fail(str(exc))
        with temporary_settings({PREFECT_API_URL: server.api_url}):
            try:
                yield Pool(settings, with_entries, llm, workers, server.api_url, held, gate)
            finally:
                flush_prefect_queues()  # while this server is up: see its docstring


def _children(client, run_id) -> list:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    return client.read_flow_runs(flow_run_filter=FlowRunFilter(
        parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[run_id])))


def _artifact_key(key: str, flow_run_id):
    """This run's artifacts under `key` (other tests of the session's pool back-fill the same project)."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    return ArtifactFilter(key=ArtifactFilterKey(any_=[key]), flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))


def _one_version_per_week(settings) -> int:
    assert _rows(settings, "SELECT project_id, week_number FROM weekly_report_versions GROUP BY ALL "
                           "HAVING count(*) > 1") == []
    assert _rows(settings, "SELECT project_id, week_number FROM weekly_reports GROUP BY ALL "
                           "HAVING count(*) > 1") == []
    return _rows(settings, "SELECT count(*) FROM weekly_reports")[0][0]


def test_a_backfill_spreads_its_weeks_over_two_workers_of_a_pool_on_postgres(pool: Pool) -> None:
    """The deployed topology. A Prefect server whose database is the session's PostgreSQL,
    `chronicle setup` + `prefect deploy --all`, two `prefect worker start` processes (separate working folders,
    sharing only PostgreSQL, S3 and the API) with `CHRONICLE_BACKFILL_SPREAD=1`; the operator starts the
    backfill deployment as the UI form would. The parent starts a `backfill-shard` child run through
    `run_deployment` (idempotency key), the other worker runs it, both write weeks, each week is written once,
    and the operator's outcome table and progress bar are the parent's, as without spreading."""
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    settings, llm = pool.settings, pool.llm
    run = run_deployment("backfill-weeks/backfill-weeks", timeout=600, poll_interval=1,
                         parameters={"project_id": "XH201", "max_workers": 1})
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(run.id)
        children = _children(client, run.id)
        table = client.read_artifacts(artifact_filter=_artifact_key("backfill-xh201", run.id))
        progress = client.read_artifacts(artifact_filter=_artifact_key("backfill-xh201-progress", run.id))
    logs = "\n".join(w.text() for w in pool.workers)
    assert run.state is not None and run.state.is_completed(), f"{run.state}\n{logs[-4000:]}"
    shards = [c for c in children if c.flow_id != run.flow_id]
    assert len(shards) == 1 and shards[0].state is not None and shards[0].state.is_completed(), children
    child = shards[0]
    assert child.idempotency_key == f"{run.id}:shard-1"
    # Parent and child ran on different workers: the worker that submitted each run, as the API records it.
    on = [r.labels.get("prefect.worker.name") for r in (run, child)]
    assert set(on) == {"worker-a", "worker-b"}, (on, logs[-4000:])
    # The child's start-up (created -> running) is what spreading costs: seconds, measured and recorded.
    [counts] = _rows(settings, f"SELECT counts FROM pipeline_runs WHERE flow_run_id = '{run.id}'")[0]
    spread = json.loads(counts)["spread"]
    assert spread["runs"] == 2 and len(spread["child_start_s"]) == 1 and spread["child_start_s"][0] < 60, spread
    print(json.dumps({"child_start_s": spread["child_start_s"]}))
    writers = dict(_rows(settings, "SELECT flow_run_id, count(*) FROM weekly_reports GROUP BY 1"))
    assert set(writers) == {str(run.id), str(child.id)}, writers  # both wrote weeks
    weeks = _one_version_per_week(settings)
    assert weeks == sum(writers.values()) and weeks >= len(pool.with_entries)
    # One LLM call per week with entries, whoever wrote it; its llm_calls row stored with the report.
    assert llm.calls() == len(pool.with_entries)
    assert _rows(settings, "SELECT count(*), count(DISTINCT week_number) FROM llm_calls") == [
        (len(pool.with_entries), len(pool.with_entries))]
    # The operator's view is the parent's, as without spreading: one outcome row per week, 100 %.
    assert len(table) == 1 and len(json.loads(table[0].data)) == weeks
    assert progress and progress[0].data == 100.0

    # The same backfill again: every week cached, no model call, still one version per week.
    before = llm.calls()
    again = run_deployment("backfill-weeks/backfill-weeks", timeout=600, poll_interval=1,
                           parameters={"project_id": "XH201", "max_workers": 1})
    assert again.state is not None and again.state.is_completed(), again.state
    assert llm.calls() == before
    assert _rows(settings, "SELECT count(*) FROM weekly_report_versions") == [(weeks,)]

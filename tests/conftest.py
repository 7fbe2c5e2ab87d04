"""The test layers, a real Prefect API for the tests that run flows, per-test data folders, the local
OpenAI-compatible server.

Layers (README "Tests"): `tests/unit/` is the pure core (no Prefect, no database server, no subprocess);
`tests/memory/` the storage of memories on throw-away files; the other folders run real flows and ask for the
session Prefect API (RUN_FLOWS below; `prefect_api` is opt-in) and are marked `flows`; END_TO_END below
(kill points, the lake, serve, Dask, the background server, the UI form) is marked `slow`. The quick layer
(`make test-quick`) is `-m "not slow and not flows"`; `-m "not slow"` adds the flows.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# A deployment run that finds its deployment's concurrency slot taken (every Chronicle deployment allows one
# run at a time) is put back to AwaitingConcurrencySlot and retried after this many seconds; Prefect's 30 s
# default makes N queued runs of one deployment wait ~30 s each. The session server reads it at start-up.
os.environ.setdefault("PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS", "1")
# A proactive automation (the zombie-run rule, the weekly deadline) fires when its window ends, at the server's next
# evaluation: Prefect evaluates every 5 s, which tests waiting for such a firing lose on average 2.5 s of; every
# second here (the windows themselves are the product's). Read at start-up by the session server and by the
# background servers the tests start.
os.environ.setdefault("PREFECT_SERVER_EVENTS_PROACTIVE_GRANULARITY", "PT1S")
for _name in [k for k in os.environ if k in {"LLM_URL", "LLM_MODEL", "LLM_API_KEY", "EMBEDDING_URL",
                                             "EMBEDDING_MODEL", "EMBEDDING_API_KEY", "DISTILL_DAYS"}
              or k.startswith("CHRONICLE_")]:
    # A developer's own endpoint or data folder must never leak into the tests.
    del os.environ[_name]
# Every `chronicle` child process runs in its own process against the session's Prefect API (the tests set
# PREFECT_API_URL): no warm runner or background server outlives a test. tests/ops/test_background.py
# turns them on, in a private PREFECT_HOME, and stops them.
os.environ["CHRONICLE_WARM"] = "0"
# Flow parameters may name input only inside the input roots (the home, the working directory, `source_paths`
# and CHRONICLE_INPUT_ROOTS): tests read pytest's temporary folders (a session's sample lies outside each test's
# working directory) and tests/data. tests/security/test_input_roots.py checks the defaults without these.
os.environ["CHRONICLE_INPUT_ROOTS"] = json.dumps([tempfile.gettempdir(), str(Path(__file__).parent)])

pytest_plugins = ["tests.fakellm.plugin"]

DATA = Path(__file__).parent / "data"
SAMPLE_MAP = {"study": "project_id", "time": "ts", "user": "actor", "event": "type", "text": "content"}
"""The sample trial's CSV columns -> Chronicle's (CHRONICLE_COLUMN_MAP)."""


# Folders whose tests share costly servers: under pytest-xdist each FILE of such a folder runs on one worker, so
# a module's fixtures (a pool of Prefect workers) start once, while the folder's files still spread over both
# workers — the folder as one unit put ~10 minutes of lake tests on one worker, the critical path of the suite.
# Session servers (PostgreSQL, moto; on free ports) then start at most once per worker. Everything else is
# spread test by test. (xdist's own `--dist loadgroup` silently stops grouping on pytest 9.2: pytest-xdist
# issue 1386.)
SHARED_SERVERS = ("tests/lake/",)
# Files whose tests share what a module fixture made once (a fragmented database file, a LanceDB table of 3,000
# rows, one interpreter's imports): one worker each, so the fixture runs once rather than on every worker that
# runs one of its tests.
SHARED_MODULE_FIXTURES = ("tests/storage/test_compaction.py", "tests/memory/test_search_scale.py",
                          "tests/test_flow_imports.py")
# The files whose tests run a pool on a Prefect server whose database is PostgreSQL (`prefect_on_postgres`, a
# session fixture of tests/lake): one unit, so one worker starts that server, keeps it for the rest of the session
# and deploys to it once (tests/lake/test_multiworker.py `pool`), where two workers each started their own.
ONE_PREFECT_ON_POSTGRES = ("tests/lake/test_dead_runs.py", "tests/lake/test_multiworker.py")
# The quick layer's files whose tests load MiniLM (the session `embedder`, or a LocalEmbedder of their own), and the
# dedup-pairs measurement (END_TO_END, the `embedder` too): all of them one unit, so one worker imports
# sentence-transformers and torch (~8 s of CPU on an idle machine, several times that under load) instead of every
# worker; the unit is handed out first (its rank in the ordering below). A file missing here is still correct, it
# only loads the model on its worker too.
ONE_EMBEDDER = ("tests/memory/test_damaged_store.py", "tests/memory/test_day_query.py",
                "tests/memory/test_floor_recency.py", "tests/memory/test_ledger_liveness.py",
                "tests/memory/test_named_query.py", "tests/memory/test_packed_rows.py", "tests/memory/test_store.py",
                "tests/memory/test_unseen_layouts.py", "tests/unit/memory/test_embedder.py",
                "tests/unit/memory/test_query_cache.py", "tests/unit/memory/test_dedup_pairs.py")


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`-n N` (pyproject's addopts): the `load` distribution, with each file of SHARED_SERVERS and
    SHARED_MODULE_FIXTURES as one unit, and the files of ONE_EMBEDDER together as one."""
    if config.getvalue("dist") != "load":
        return None  # an explicit other --dist is honoured
    from xdist.scheduler import LoadScopeScheduling

    class ServerGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(ONE_EMBEDDER):
                return "one-embedder"
            if nodeid.startswith(ONE_PREFECT_ON_POSTGRES):
                return "one-prefect-on-postgres"
            shared = nodeid.startswith(SHARED_SERVERS + SHARED_MODULE_FIXTURES)
            return nodeid.split("::", 1)[0] if shared else nodeid

    # LoadScopeScheduling would put the units with the most tests first (`--loadscope-reorder`, on by default):
    # a lake file of nine short tests before one of two long ones. Collection order is LONGEST_FIRST's.
    config.option.loadscopereorder = False
    return ServerGroups(config, log)


# End-to-end tests: whole processes, servers and kill points. Marked `slow` here, in one place, so the quick
# layer (`make test-quick`) leaves them out and `make test` still runs them; a test elsewhere can also carry
# `@pytest.mark.slow` itself.
END_TO_END = (
    "tests/lake/",  # PostgreSQL, S3 (moto), a Prefect server on PostgreSQL, several workers
    "tests/reliability/",  # kill points and faults in fresh interpreters
    "tests/deployments/test_dask.py",  # a local Dask cluster
    "tests/deployments/test_serve_backfill.py",  # `chronicle serve` + deployment runs
    "tests/deployments/test_concurrency.py",  # several `chronicle` processes against one API
    "tests/ops/test_background.py",  # the background Prefect server and warm runner
    "tests/ops/test_refused_runs.py",  # the UI's form, submitted through the API, served runs
    "tests/ops/test_run_history.py",  # served runs and their history
    "tests/ops/test_cancel_runs.py",  # served runs cancelled as the UI's Cancel button does
    "tests/unit/memory/test_dedup_pairs.py",  # a measurement: every labelled pair through two real models (~1 min)
    "tests/assistant/test_mcp_server.py",  # `chronicle mcp` child processes (stdio, HTTP) driven by the MCP client
    "tests/ops/test_llm_slots_recover.py",  # the background server killed and restarted, a lease left to expire
    "tests/ops/test_serve_follows_server.py",  # `chronicle serve` against a background server that is stopped
    "tests/desk/test_concurrent_saves.py",  # corrections saved by several processes, and during a backfill
    "tests/desk/test_browser.py",  # Chromium driven by Selenium against the desk served by uvicorn
    "tests/integration/test_ingest_unreadable.py",  # drops to an unprivileged user in a child process
)


# Folders whose every test runs a flow or reads the API: each of their modules uses the session's `prefect_api`
# (`pytest_pycollect_makemodule`), and their tests are marked `flows`, so that the quick layer need not even import
# them (`pytest_ignore_collect`).
RUN_FLOWS = ("tests/analysts/", "tests/deployments/", "tests/distill/", "tests/integration/", "tests/lake/",
             "tests/ops/", "tests/reliability/", "tests/security/", "tests/weekly/")


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> Iterator[Any]:
    """A module of RUN_FLOWS uses `prefect_api`, marked before its tests are collected (their fixtures are worked
    out as they are): the one place that says which tests get a Prefect server. tests/unit never starts one."""
    module = yield
    if module is not None and module_path.relative_to(parent.config.rootpath).as_posix().startswith(RUN_FLOWS):
        module.add_marker(pytest.mark.usefixtures("prefect_api"))
    return module


# The longest files, started first so that no worker is left alone with one of them at the end (the longest-
# processing-time-first rule; the scheduler hook above hands out units in collection order). Measured with
# `--durations` on 2 cores: 45 s to 3.5 minutes each; the lake files count their pools' start-up.
# test_worker_sigterm waits for the shortest zombie-run window now (~50 s in all), no longer one of the longest.
LONGEST_FIRST = ("tests/lake/test_dead_runs.py", "tests/ops/test_deploy_doc.py",
                 "tests/reliability/test_kill_distill.py", "tests/lake/test_multiworker.py",
                 "tests/ops/test_llm_slots_recover.py", "tests/ops/test_background.py",
                 "tests/lake/test_concurrent_backfills.py", "tests/ops/test_stop.py",
                 "tests/ops/test_worker_sigterm.py", "tests/ops/test_serve_follows_server.py",
                 "tests/reliability/test_kill_weekly.py", "tests/reliability/test_kill_ingest.py",
                 "tests/ops/test_refused_runs.py", "tests/ops/test_cancel_runs.py", "tests/ops/test_automations.py",
                 "tests/lake/test_backends.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): one worker more than the cores when the run has tests that wait. Most of
    the end-to-end and flow tests wait — on a flow run's process start, a worker's poll, a 30 s heartbeat that must
    lapse before a dead run is Crashed — and a third worker fills those waits: on 2 cores the suite took 18.9 min
    with 3 workers where 2 took 22.4 min. The quick layer (neither slow nor flows) hardly waits, and a third worker
    only oversubscribes the cores (each process's thread pools — torch, DuckDB, Lance — are sized to the cores): on 2
    cores it took 57-60 s and ~100 s of CPU with 2 workers, 63-71 s and 120-135 s of CPU with 3."""
    cores = os.cpu_count() or 1
    waits = not (_deselects(config.option.markexpr, "slow") and _deselects(config.option.markexpr, "flows"))
    return cores + 1 if waits else cores


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`slow`: END_TO_END. `flows`: every test that uses the session's Prefect API (all of RUN_FLOWS, marked so as
    they were collected, and any other that asks for it).
    Order: LONGEST_FIRST, ONE_EMBEDDER, then the collection order."""
    root = config.rootpath
    rank = {path: i for i, path in enumerate(LONGEST_FIRST + ONE_EMBEDDER)}
    items.sort(key=lambda item: rank.get(item.path.relative_to(root).as_posix(), len(rank)))
    for item in items:
        where = item.path.relative_to(root).as_posix()
        if where.startswith(END_TO_END):
            item.add_marker(pytest.mark.slow)
        if "prefect_api" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.flows)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A folder or file of END_TO_END (all `slow`) or RUN_FLOWS (all `flows`) is not even imported when `-m`
    deselects every test of it whatever their other marks (the quick layer): every xdist worker imports every module
    it collects, and these bring Prefect's client, the flows, LanceDB, Dask, the MCP client — seconds per worker for
    tests that `-m` then throws away."""
    if not collection_path.is_relative_to(config.rootpath):
        return None
    where = f"{collection_path.relative_to(config.rootpath).as_posix()}/"  # a folder ("tests/lake/") or a file
    marked = [mark for mark, paths in (("slow", END_TO_END), ("flows", RUN_FLOWS)) if where.startswith(paths)]
    return True if any(_deselects(config.option.markexpr, mark) for mark in marked) else None


def _deselects(markexpr: str, mark: str) -> bool:
    """Whether `-m markexpr` is false for every test carrying `mark`, for every truth of the expression's other
    names. Unsure (a mark with arguments, pytest's parser moved) is "no": collect as usual."""
    if not markexpr:
        return False
    from functools import partial
    from itertools import product

    try:
        from _pytest.mark.expression import Expression

        expression = Expression.compile(markexpr)
        others = sorted(expression.idents() - {mark})
        for truths in product((False, True), repeat=len(others)):
            if expression.evaluate(partial(_carries, dict(zip(others, truths, strict=True)) | {mark: True})):
                return False
    except (ImportError, AttributeError, LookupError, TypeError, SyntaxError, pytest.UsageError):
        return False
    return True


def _carries(marks: dict[str, bool], name: str, /, **kwargs: object) -> bool:
    if kwargs:  # `-m "mark(arg=…)"`: what it matches depends on the test
        raise LookupError(name)
    return marks[name]


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[None]:
    """One real Prefect API (SQLite-backed server) per session, started by the first test that asks for it
    (~13 s): folders whose tests run flows request it in their conftest; tests/unit never does."""
    from prefect.testing.utilities import prefect_test_harness

    _one_ssl_context_per_ca_file()
    with prefect_test_harness(server_startup_timeout=120):
        yield
        flush_prefect_queues()


def _one_ssl_context_per_ca_file() -> None:
    """Prefect makes a new verified SSL context, the CA bundle parsed again (~50 ms of CPU), for every client it
    builds — each flow run, each slot released, each test's limit reset — though the session server is plain http
    (PrefectHQ/prefect#19106 would let a caller hand it one). The test processes keep one per CA file: the same
    context, shared as one httpx client shares it between its connections. Only that call, with its `cafile`, is
    kept; any other (the unverified one Prefect then changes) is made afresh."""
    import ssl
    import types

    import prefect.client.orchestration as orchestration

    from chronicle.services.prefect_client import verified_context

    def create_default_context(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        if not args and kwargs.keys() == {"cafile"}:
            return verified_context(kwargs["cafile"])
        return ssl.create_default_context(*args, **kwargs)

    orchestration.ssl = types.SimpleNamespace(**{**vars(ssl), "create_default_context": create_default_context})


@pytest.fixture(autouse=True)
def _fresh_llm_limit(request: pytest.FixtureRequest) -> None:
    """Every test that runs flows starts with no `llm` concurrency limit on the session's API (the first LLM
    reservation creates it at the test's CHRONICLE_LLM_CONCURRENCY).

    A test that kills a process holding `llm` slots (the kill points, a stopped run) leaves its lease behind. A
    deployed `prefect server start` revokes an expired lease (its repossessor service); the session's test server
    is Prefect's ephemeral one, which does not run that service, so the slot stayed taken for the rest of the
    session and a later test with one slot waited for it forever (seen once with three xdist workers: a distill
    run stuck in `reserve_llm` until the 600 s timeout)."""
    if "prefect_api" not in request.fixturenames:
        return
    request.getfixturevalue("prefect_api")
    from contextlib import suppress

    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    from chronicle.services.llm_gate import LIMIT_NAME

    with get_client(sync_client=True) as client, suppress(ObjectNotFound):
        client.delete_global_concurrency_limit_by_name(LIMIT_NAME)


def flush_prefect_queues(timeout: float = 60) -> None:
    """Send what this process queued for Prefect APIs (logs, events), waiting at most `timeout` seconds.

    Prefect's queue services keep one instance per API URL for the life of the process, and the harness drains
    them all at its exit with no timeout. A test that pointed this process at another server (the lake's Prefect
    on PostgreSQL, tests/lake) leaves an instance bound to that server, which is torn down first at the session's
    end: the harness's drain then waits for it forever (seen once: every test done, the suite stuck in the
    session's teardown). So a fixture that switches servers flushes before its server stops, and the session
    flushes once more here, bounded; an instance drained here is stopped and forgotten, so the harness's own
    drain finds nothing left to wait for."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=timeout)
    EventsWorker.drain_all(timeout=timeout)


def flow_run_artifacts(flow_run_id: Any) -> list[Any]:
    """Every artifact linked to a flow run, as its Artifacts tab lists them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(
            any_=[flow_run_id])))


def flow_run_logs(flow_run_id: Any, wanted: str) -> list[str]:
    """A flow run's log lines as its Logs tab shows them, once one containing `wanted` arrived (logs reach the API
    from a background queue); every line so far after a minute without it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    deadline = time.monotonic() + 60
    while True:
        APILogWorker.drain_all(timeout=30)
        with get_client(sync_client=True) as client:
            lines = [e.message for e in client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))]
        if any(wanted in line for line in lines) or time.monotonic() > deadline:
            return lines
        time.sleep(0.2)


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh CHRONICLE_HOME (DuckDB file, LanceDB folder, workspace) for one test."""

    h = tmp_path / "home"
    monkeypatch.setenv("CHRONICLE_HOME", str(h))
    monkeypatch.chdir(tmp_path)
    yield h


@pytest.fixture()
def settings(home: Path):
    from chronicle.settings import Settings

    return Settings()


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated sample trial, written once per session (generation is deterministic)."""
    from chronicle.sample import generate_sample

    out = tmp_path_factory.mktemp("sample")
    generate_sample(out)
    return out


@pytest.fixture(scope="session")
def embedder():
    """The real offline embedder (loading MiniLM takes a few seconds, so once per session)."""
    from chronicle.memory.embedder import LocalEmbedder
    from chronicle.settings import MINILM_EMBEDDING_MODEL, Settings

    # MiniLM, not the default: these tests' scores and thresholds are stated for it (the default model has
    # its own tests: dedup pairs, reindex, bench/embedders).
    return LocalEmbedder(Settings(home=Path("unused"), embedding_model=MINILM_EMBEDDING_MODEL))


@pytest.fixture(scope="session")
def ingested_home(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory, prefect_api: None) -> Path:
    """A CHRONICLE_HOME holding the sample's logs (both projects) ingested through the real flow, once per
    session (~7 s); tests that start from the ingested sample copy it (tests/integration checks the ingest)."""
    from chronicle.flows.ingest_logs import ingest_logs

    home = tmp_path_factory.mktemp("sample-ingested") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHRONICLE_HOME", str(home))
        mp.setenv("CHRONICLE_COLUMN_MAP", json.dumps(SAMPLE_MAP))
        summary = ingest_logs([str(sample_dir / "logs")])
        assert summary.rejects == {}
    return home

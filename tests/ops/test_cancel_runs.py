"""An operator cancels a run from the Prefect UI (its Cancel button: `set_flow_run_state(..., Cancelling())`).

`chronicle serve` runs each run in a process of its own. Prefect's runner tells that process it cancels (a loopback
channel), then sends it SIGTERM (SIGKILL 30 s later), runs the flow's `on_cancellation` hooks in its own process and
sets the run Cancelled. Whatever point the run was at, Prefect and `chronicle runs` both end it Cancelled, without a
traceback, what it stored stays stored, and what it held (its `llm` slots, its week leases, the deployment's
concurrency slot) is free for the next run at once. A run started from a terminal, which no runner watches, stops
itself the same way.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.states import Cancelling, Running
from typer.testing import CliRunner

from chronicle.cli.main import app
from chronicle.deployments.setup import run_setup
from chronicle.run_rows import CANCELLED_MESSAGE
from chronicle.settings import Settings
from chronicle.storage.db import connect
from tests.conftest import flow_run_logs
from tests.deployments.conftest import serving, wait_final, write_jsonl
from tests.fakellm import FakeLLMServer, default_responder

pytestmark = pytest.mark.slow

BACKFILL = "backfill-weeks/backfill-weeks"
KILL_AFTER_S = 30  # Prefect's runner: SIGTERM, then SIGKILL this long after
WEEKS = {"start_week": "2026-W01", "end_week": "2026-W05"}  # 2 projects x 5 weeks


def _cancel(flow_run_id: Any) -> None:
    """What the UI's Cancel button sends."""
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(flow_run_id, Cancelling())


def _row(settings: Settings, flow_run_id: Any) -> tuple[str, str | None] | None:
    with connect(settings, read_only=True) as conn:
        found = conn.execute("SELECT state, message FROM pipeline_runs WHERE flow_run_id = ?",
                             [str(flow_run_id)]).fetchall()
    return found[0] if found else None


def _wait_row(settings: Settings, flow_run_id: Any, state: str, timeout: float = 120) -> None:
    """Until the run's row reads `state` (the event: the run's own process recorded it)."""
    deadline = time.monotonic() + timeout
    while (row := _row(settings, flow_run_id)) is None or row[0] != state:
        assert time.monotonic() < deadline, f"row {row} never became {state}"
        time.sleep(0.1)  # polling the database for the event


def _listed(flow_run_id: Any) -> dict[str, Any]:
    """The run as `chronicle runs --format json` lists it."""
    result = CliRunner().invoke(app, ["runs", "--format", "json"])
    assert result.exit_code == 0, result.output
    return next(r for r in json.loads(result.output) if r["flow_run_id"] == str(flow_run_id))


def _assert_cancelled(settings: Settings, flow_run_id: Any, log: Path) -> None:
    """Prefect, `chronicle runs` and the logs agree: cancelled, one line, no traceback."""
    run = wait_final(flow_run_id)
    assert run.state.is_cancelled(), f"{run.state}\n{log.read_text()[-4000:]}"
    row = _listed(flow_run_id)
    assert (row["state"], row["message"]) == ("CANCELLED", CANCELLED_MESSAGE), row
    lines = flow_run_logs(flow_run_id, "Flow run was cancelled")  # the process ended by itself, its logs sent
    assert any("Flow run was cancelled" in line for line in lines), f"{lines}\n{log.read_text()[-4000:]}"
    assert not any("Traceback" in line for line in lines), lines
    assert "Traceback" not in log.read_text(), log.read_text()[-4000:]
    with get_client(sync_client=True) as client:  # its `llm` slots are back
        assert client.read_global_concurrency_limit_by_name("llm").active_slots == 0


def _held_after(n: int) -> tuple[Callable[[dict], str], threading.Event, threading.Event]:
    """An LLM that answers `n` calls, then holds every further one until `release` is set; `stuck` is set once it
    holds one (the run is mid-way: weeks stored, calls in flight)."""
    lock, answered, stuck, release = threading.Lock(), [0], threading.Event(), threading.Event()

    def responder(request: dict) -> str:
        with lock:
            answered[0] += 1
            first = answered[0] <= n
        if not first:
            stuck.set()
            release.wait(timeout=300)
        return default_responder(request)

    return responder, stuck, release


@pytest.fixture()
def served(home: Path, tmp_path: Path, settings: Settings, proc_env: dict[str, str]):
    """Two projects of five weeks each ingested, and `chronicle serve` with an LLM whose answers the test holds."""
    from chronicle.flows.ingest_logs import ingest_logs

    write_jsonl(tmp_path / "logs" / "a.jsonl", "ALPHA", 40, "a")
    write_jsonl(tmp_path / "logs" / "b.jsonl", "BETA", 40, "b")
    ingest_logs([str(tmp_path / "logs")])
    run_setup(settings, work_pool=False)
    with FakeLLMServer() as llm:
        env = {**proc_env, "LLM_URL": llm.base_url, "CHRONICLE_LLM_CONCURRENCY": "2"}
        with serving(tmp_path, env) as log:
            yield llm, log


def test_cancel_mid_backfill_keeps_its_weeks_and_frees_everything_at_once(settings: Settings, served) -> None:
    llm, log = served
    responder, stuck, release = _held_after(3)

    llm.responder = responder
    run = run_deployment(BACKFILL, timeout=0, parameters=WEEKS)
    assert stuck.wait(timeout=300), log.read_text()[-3000:]
    _cancel(run.id)
    _wait_row(settings, run.id, "CANCELLED")  # the run's body has stopped: it gave back its slots and leases
    asked = llm.calls()
    release.set()  # the calls in flight answer, as a real LLM would a moment later
    _assert_cancelled(settings, run.id, log)
    assert llm.calls() == asked, "the cancelled run went on calling the LLM"

    with connect(settings, read_only=True) as conn:
        stored = conn.execute("SELECT count(*) FROM weekly_reports").fetchall()[0][0]
    assert 0 < stored < 10
    # The next backfill starts at once (the deployment's slot, the leases and the `llm` slots are free) and writes
    # only what is missing, each week once.
    llm.responder = default_responder
    before = llm.calls()
    again = wait_final(run_deployment(BACKFILL, timeout=0, parameters=WEEKS).id)
    assert again.state.is_completed(), again.state.message
    assert f"generated {10 - stored}" in again.state.message, again.state.message
    assert llm.calls() - before == 10 - stored
    logs = flow_run_logs(again.id, "Finished in state")
    assert not any("waiting" in line for line in logs), logs
    with connect(settings, read_only=True) as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT (project_id, week_number)) "
                            "FROM weekly_reports").fetchall() == [(10, 10)]


def test_cancel_while_waiting_for_llm_slots(settings: Settings, served) -> None:
    from prefect.concurrency.sync import concurrency

    _llm, log = served
    with concurrency("llm", occupy=2, strict=True, timeout_seconds=60):  # another run holds every slot
        run = run_deployment(BACKFILL, timeout=0, parameters=WEEKS)
        flow_run_logs(run.id, "waiting for")
        cancelled = time.monotonic()
        _cancel(run.id)
        # Final before the test gives the slots back: a request of the cancelled run granted late would show below.
        wait_final(run.id)
        # Its process ended by itself, not by the runner's SIGKILL 30 s after its SIGTERM: Prefect's slot service
        # finishes a request in flight before the process may exit, and the run's last request was still waiting.
        assert time.monotonic() - cancelled < KILL_AFTER_S, "the cancelled run's process waited for its kill"
    _assert_cancelled(settings, run.id, log)


def test_a_cancel_during_the_final_write_ends_the_row_cancelled(settings: Settings) -> None:
    """The cancel lands after the body wrote its final row (while it publishes the snapshot, or returns): Prefect
    ends the run Cancelled, so the flow's `on_cancellation` hooks, which Prefect's runner calls in its own process
    once the run's process is gone, make the row say so, its counts kept."""
    import asyncio

    from prefect.runner._hook_runner import HookRunner

    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.storage import pipeline_runs as runs

    with get_client(sync_client=True) as client:
        run = client.create_flow_run(backfill_weeks, parameters=WEEKS, state=Running())
    with connect(settings) as conn:
        runs.run_started(conn, str(run.id), "backfill-weeks", WEEKS)
        runs.run_finished(conn, str(run.id), "COMPLETED", {"weeks": 10}, "10 weeks: generated 10")
    _cancel(run.id)

    async def the_flow(_run: Any) -> Any:
        return backfill_weeks

    said: list[str] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("prefect.flow_runs").addHandler(handler)  # where the runner logs a hook that failed
    try:
        asyncio.run(HookRunner(resolve_flow=the_flow).run_cancellation_hooks(run, Cancelling()))
    finally:
        logging.getLogger("prefect.flow_runs").removeHandler(handler)
    assert said == []
    assert _row(settings, run.id) == ("CANCELLED", CANCELLED_MESSAGE)
    assert _listed(run.id)["counts"] == {"weeks": 10}


def test_a_scheduled_run_cancelled_before_it_starts(settings: Settings, served) -> None:
    """Never started: Prefect ends it Cancelled at once, it has no row, and the next run starts at once."""
    _llm, log = served
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name(BACKFILL)
        from datetime import UTC, datetime, timedelta

        from prefect.states import Scheduled

        later = client.create_flow_run_from_deployment(
            deployment.id, parameters=WEEKS, state=Scheduled(scheduled_time=datetime.now(UTC) + timedelta(hours=1)))
    _cancel(later.id)
    assert wait_final(later.id).state.is_cancelled()
    assert _row(settings, later.id) is None
    now = wait_final(run_deployment(BACKFILL, timeout=0, parameters=WEEKS).id)
    assert now.state.is_completed(), f"{now.state}\n{log.read_text()[-3000:]}"


def _operator(settings: Settings, llm: FakeLLMServer, stuck: threading.Event, release: threading.Event,
              seen: dict[str, Any]) -> None:
    """Cancels the terminal's run from the UI once it is mid-way, and has the LLM answer once the run's body has
    stopped: what it had asked and stored by then go into `seen`."""
    try:
        assert stuck.wait(timeout=300)
        with connect(settings, read_only=True) as conn:  # this test's run, among the session's
            ((seen["run"],),) = conn.execute("SELECT flow_run_id FROM pipeline_runs WHERE state = 'RUNNING' "
                                             "AND flow_name = 'backfill-weeks'").fetchall()
        _cancel(seen["run"])
        _wait_row(settings, seen["run"], "CANCELLED", timeout=60)  # stopped while its LLM calls still hang
        seen["asked"] = llm.calls()
        with connect(settings, read_only=True) as conn:
            seen["stored"] = conn.execute("SELECT count(*) FROM weekly_reports").fetchall()[0][0]
    except BaseException as exc:
        seen["error"] = exc
    finally:
        release.set()  # the calls in flight answer, as a real LLM would a moment later


def test_a_run_from_a_terminal_stops_at_the_cancel(home: Path, tmp_path: Path, settings: Settings,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """No runner watches a run started from a terminal: the run itself reads its state and stops at the UI's Cancel
    as a served run does, mid-way through its weeks. What it stored stays, it calls the LLM no more, Prefect and
    `chronicle runs` both say cancelled, the command ends 1 with one line, and the next backfill writes the rest."""
    from chronicle.flows.ingest_logs import ingest_logs

    write_jsonl(tmp_path / "logs" / "a.jsonl", "ALPHA", 40, "a")
    write_jsonl(tmp_path / "logs" / "b.jsonl", "BETA", 40, "b")
    ingest_logs([str(tmp_path / "logs")])
    responder, stuck, release = _held_after(3)

    seen: dict[str, Any] = {}
    weeks = ["backfill", "--all", "--from", "2026-W01", "--to", "2026-W05"]
    with FakeLLMServer() as llm:
        llm.responder = responder
        monkeypatch.setenv("LLM_URL", llm.base_url)
        monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "2")
        helper = threading.Thread(target=_operator, args=(settings, llm, stuck, release, seen))
        helper.start()
        handler = signal.getsignal(signal.SIGTERM)
        result = CliRunner().invoke(app, weeks)  # in the main thread, as a terminal runs it
        helper.join(timeout=300)
        assert "error" not in seen, seen.get("error")
        assert signal.getsignal(signal.SIGTERM) == handler  # a later run in this process starts as this one did
        assert result.exit_code == 1 and not isinstance(result.exception, Exception), (result, result.exception)
        assert "the run was cancelled" in result.output and "Traceback" not in result.output, result.output
        assert wait_final(seen["run"], timeout=60).state.is_cancelled()
        assert _row(settings, seen["run"]) == ("CANCELLED", CANCELLED_MESSAGE)
        assert seen["asked"] < 10 and llm.calls() == seen["asked"], "the cancelled run went on calling the LLM"
        with connect(settings, read_only=True) as conn:
            stored = conn.execute("SELECT count(*) FROM weekly_reports").fetchall()[0][0]
        assert 0 < seen["stored"] <= stored < 10
        with get_client(sync_client=True) as client:  # its `llm` slots are back
            assert client.read_global_concurrency_limit_by_name("llm").active_slots == 0

        llm.responder = default_responder
        before = llm.calls()
        again = CliRunner().invoke(app, weeks)
        assert again.exit_code == 0, again.output
        assert llm.calls() - before == 10 - stored
    with connect(settings, read_only=True) as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT (project_id, week_number)) "
                            "FROM weekly_reports").fetchall() == [(10, 10)]


def test_cancel_mid_distill_leaves_the_knowledge_files_and_vectors_whole(home: Path, tmp_path: Path,
                                                                          settings: Settings,
                                                                          proc_env: dict[str, str]) -> None:
    """A distill cancelled between its chunks stores nothing of its run (it stores once every chunk is distilled),
    leaves the knowledge files as they were and no temporary file, and the next distill does the whole window."""
    import re
    import shutil

    from chronicle.flows.ingest_logs import ingest_logs
    from chronicle.services.distill import memory_count
    from tests.reliability.test_kill_distill import OPENCLAW, assert_well_formed, knowledge

    shutil.copytree(OPENCLAW, tmp_path / "notes" / "memory")
    ingest_logs([str(tmp_path / "notes")])
    run_setup(settings, work_pool=False)
    workspace = settings.workspace_dir
    before = knowledge(workspace)
    lock, answered, stuck, release = threading.Lock(), [0], threading.Event(), threading.Event()

    def responder(request: dict) -> str:
        with lock:
            answered[0] += 1
            first = answered[0] == 1
        if not first:
            stuck.set()
            release.wait(timeout=300)
        day = re.search(r"\d{4}-\d{2}-\d{2}", json.dumps(request, ensure_ascii=False))
        content = f"Deploys on {day.group(0) if day else 'a day'} go through the release checklist."
        return json.dumps([{"content": content, "summary": content, "keyInfo": ["k"], "tags": ["t"],
                            "importance": 0.8, "targetFile": "MEMORY.md", "action": "append"}])

    distill = {"days": 30, "until": "2026-02-28"}
    with FakeLLMServer() as llm:
        llm.responder = responder
        env = {**proc_env, "LLM_URL": llm.base_url, "LLM_MODEL": "fake-distill", "EMBEDDING_URL": llm.base_url,
               "EMBEDDING_MODEL": "fake-embedding", "CHRONICLE_LLM_CONCURRENCY": "1"}
        with serving(tmp_path, env) as log:
            run = run_deployment("distill-memory/distill-memory", timeout=0, parameters=distill)
            assert stuck.wait(timeout=300), log.read_text()[-3000:]
            _cancel(run.id)
            _wait_row(settings, run.id, "CANCELLED")
            asked = llm.calls()
            release.set()
            _assert_cancelled(settings, run.id, log)
            assert llm.calls() == asked, "the cancelled run went on calling the LLM"
            assert knowledge(workspace) == before
            assert not list(workspace.rglob("*.tmp"))
            vectors = settings.updated(embedding_url=llm.base_url, embedding_model="fake-embedding")
            assert memory_count(vectors) == 0  # no vector of the cancelled run

            again = wait_final(run_deployment("distill-memory/distill-memory", timeout=0, parameters=distill).id)
            assert again.state.is_completed(), f"{again.state}\n{log.read_text()[-3000:]}"
            assert memory_count(vectors) > 0
    for name, data in knowledge(workspace).items():
        assert_well_formed(name, data, "after the rerun")
    assert "Deploys on" in knowledge(workspace).get("MEMORY.md", b"").decode()

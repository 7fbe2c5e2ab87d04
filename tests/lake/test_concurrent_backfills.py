"""Two backfills handed the same weeks at once call the model once per week and write one version per week,
in both topologies; two processes folding the same rollup store it once.

The backfills are real flow runs (Prefect API of the session) in two threads, against the local
OpenAI-compatible server through the real `openai` client. The server holds every request until the
second backfill has planned its weeks and started their tasks (seen through the Prefect API), so the two
runs overlap for certain: without the week claim, the second run would write every week again.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import FakeLLMServer
from tests.lake.helpers import child_env

WEEKS = ("2025-W20", "2025-W29")  # ten ISO weeks with entries in the sample's XH201 logs
LOGS = ("2025-05.jsonl", "2025-06.jsonl", "2025-07.jsonl")
REPLY = "## 本周要点\n\n- 项目按计划推进，详见流水账 [E1]。\n"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(params=["embedded", "lake"])
def topology(request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This process pointed at one topology (the flows' `load_settings()` sees it); returns its variables."""
    env = {} if request.param == "embedded" else request.getfixturevalue("lake_env")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield env
    if env:
        from chronicle.storage import lake

        lake.close_sessions()


@pytest.fixture()
def trial_slice(sample_dir: Path, tmp_path: Path, topology: dict[str, str]) -> Path:
    from chronicle.flows.ingest_logs import ingest_logs

    folder = tmp_path / "logs"
    folder.mkdir()
    for name in LOGS:
        shutil.copy(sample_dir / "logs" / "XH201" / name, folder / name)
    ingest_logs([str(folder)])
    return folder


def _rows(sql: str) -> list[tuple]:
    from chronicle.settings import Settings
    from chronicle.storage.db import connect

    with connect(Settings()) as conn:
        return conn.execute(sql).fetchall()


def _running_tasks(tag: str) -> int:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterTags,
        TaskRunFilter,
        TaskRunFilterName,
        TaskRunFilterState,
        TaskRunFilterStateName,
    )

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=[tag])),
            task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_="summarize-"),
                                          state=TaskRunFilterState(name=TaskRunFilterStateName(any_=["Running"]))))
    return len(runs)


def _wait(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_two_concurrent_backfills_call_the_model_once_per_week(topology: dict[str, str], trial_slice: Path,
                                                               fake_llm: FakeLLMServer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect import tags

    from chronicle.flows.backfill_weeks import backfill_weeks

    monkeypatch.setenv("LLM_URL", fake_llm.base_url)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "16")  # both runs get slots: the claim is what is tested
    monkeypatch.setenv("CHRONICLE_LLM_TIMEOUT_S", "60")
    gate = threading.Event()

    def slow(_request: dict[str, Any]) -> str:
        gate.wait(timeout=120)  # a slow model: every answer waits until both runs are in flight
        return REPLY

    fake_llm.responder = slow
    results: dict[str, Any] = {}

    def backfill(tag: str) -> None:
        try:
            with tags(tag):
                results[tag] = backfill_weeks(project_id="XH201", start_week=WEEKS[0], end_week=WEEKS[1])
        except BaseException as exc:  # reported by the assertion below
            results[tag] = exc

    first = threading.Thread(target=backfill, args=("run-a",))
    second = threading.Thread(target=backfill, args=("run-b",))
    try:
        first.start()
        _wait(lambda: fake_llm.calls() >= 1, "the first run's first LLM request")
        second.start()
        # The second run has planned (every week still without a report) and its week tasks are running.
        _wait(lambda: _running_tasks("run-b") >= 1, "the second run's week tasks")
    finally:
        gate.set()
        first.join(timeout=240)
        if second.ident is not None:
            second.join(timeout=240)
    assert not first.is_alive() and not second.is_alive()
    for tag in ("run-a", "run-b"):
        assert isinstance(results[tag], list), results[tag]

    assert fake_llm.calls() == 10, f"{fake_llm.calls()} LLM calls for 10 weeks"
    assert _rows("SELECT count(*), count(DISTINCT week_number) FROM weekly_reports") == [(10, 10)]
    assert _rows("SELECT count(*), count(DISTINCT week_number), max(version) FROM weekly_report_versions") == [
        (10, 10, 1)]
    outcomes = [r.outcome for tag in ("run-a", "run-b") for r in results[tag]]
    assert outcomes.count("generated") == 10 and outcomes.count("cached") == 10, outcomes
    reused = [r for r in results["run-b"] if r.outcome == "cached"]
    assert reused and all(r.why == "written by a concurrent run" for r in reused)
    assert _rows("SELECT count(*) FROM llm_calls") == [(10,)]


def test_weeks_finished_by_another_run_after_this_plan_are_reused_when_leased(topology: dict[str, str],
                                                                             trial_slice: Path) -> None:
    """The bulk-lease path: a run that planned before another one wrote its weeks wins their (finished)
    claims, sees that they ended after its plan, reads them again and reuses them; one that planned after
    the writes, even with `force`, leases and writes them."""
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.services.weekly import REUSED_WHY, lease_weeks, plan_project
    from chronicle.settings import Settings
    from chronicle.storage.claims import Leases
    from chronicle.weekly.engine import engine_model
    from chronicle.weeks import IsoWeek

    settings = Settings()
    first, last = IsoWeek.parse(WEEKS[0]), IsoWeek.parse(WEEKS[1])
    early = plan_project(settings, "XH201", first, last, force=True)  # planned before the other run wrote
    backfill_weeks(project_id="XH201", start_week=WEEKS[0], end_week=WEEKS[1], force=True)
    late = plan_project(settings, "XH201", first, last, force=True)  # planned after it
    model = engine_model(settings)
    for plan, expect_reused in ((early, True), (late, False)):
        with Leases(settings, ttl_s=settings.weekly.week_lease_s) as leases:
            answered = lease_weeks(settings, leases, plan.to_run, model, planned_at=plan.planned_at)
            leased = [job for job in plan.to_run if leases.holds(job.claim_key(model))]
        if expect_reused:
            assert not leased and len(answered) == 10
            assert {(r.outcome, r.why) for r in answered.values()} == {("cached", REUSED_WHY)}
        else:
            assert len(leased) == 10 and not answered


ROLLUP = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
from chronicle.settings import Settings
from chronicle.services.history import build_history_context
print(build_history_context(Settings(), "XH201", max_tokens=400), flush=True)
"""


def test_two_processes_folding_the_same_rollups_build_and_store_them_once(
        topology: dict[str, str], trial_slice: Path, tmp_path: Path, home: Path, fake_llm: FakeLLMServer) -> None:
    from prefect.settings import PREFECT_API_URL

    from chronicle.flows.backfill_weeks import backfill_weeks

    backfill_weeks(project_id="XH201")  # offline reports; the rollups of them are written by the "LLM"
    gate = threading.Event()

    def slow(_request: dict[str, Any]) -> str:
        gate.wait(timeout=120)
        return "本月入组与安全性事件按计划记录。"

    fake_llm.responder = slow
    env = child_env(home, {**topology, "LLM_URL": fake_llm.base_url, "LLM_MODEL": "fake-model",
                           "PREFECT_API_URL": str(PREFECT_API_URL.value())})
    logs = [tmp_path / "first.err", tmp_path / "second.err"]
    procs = []
    try:
        for log in logs:
            with log.open("w") as err:
                procs.append(subprocess.Popen([sys.executable, "-c", ROLLUP], env=env, cwd=tmp_path,
                                              stdout=subprocess.PIPE, stderr=err, text=True))
            if len(procs) == 1:  # the first builder is inside its first rollup call
                _wait(lambda: fake_llm.calls() >= 1, "the first rollup request")
        # The second builder has read the stored rollups (none yet) and is now either waiting for the
        # project's rollup claim (it says so) or, without one, calling the model for the same periods.
        _wait(lambda: "waiting for it" in logs[1].read_text() or fake_llm.calls() >= 2,
              "the second builder to wait or call")
    finally:
        gate.set()
    outs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [log.read_text()[-3000:] for log in logs]
    assert outs[0] == outs[1] and "本月入组" in outs[0]
    rows = _rows("SELECT level, period, count(*) FROM chronicle_rollups GROUP BY ALL ORDER BY ALL")
    assert rows and all(n == 1 for _level, _period, n in rows), rows
    assert fake_llm.calls() == len(rows), f"{fake_llm.calls()} rollup calls for {len(rows)} rollups"

"""What an operator sees of a weekly run stays true: weeks needing review are said, a group with failed weeks is
not green, an expected partial failure has no traceback, a far end week or a week that has not ended pads nothing, an
edit saved while a regeneration runs is kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from chronicle.settings import Settings
from tests.conftest import flow_run_artifacts, flow_run_logs
from tests.fakellm import FakeLLMServer
from tests.weekly.conftest import cite_first, db_rows, week_of_request

pytestmark = pytest.mark.timeout(300)


def _client() -> Any:
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _summary(flow_run_id: UUID) -> str:
    (summary,) = [a for a in flow_run_artifacts(flow_run_id) if a.key and a.key.endswith("-summary")]
    return str(summary.data)


def test_weeks_needing_review_are_in_the_state_message_and_summary_also_when_cached(
        trial: Path, online: FakeLLMServer) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks

    # Every week claims 99 enrolments: the guard flags each one that has entries.
    online.responder = lambda request: "## 本周\n\n- 本周入组 99 人 [E1]。\n"
    state = backfill_weeks(project_id="XH201", start_week="2025-W28", end_week="2025-W31", return_state=True)
    assert state.is_completed()
    flagged = db_rows("SELECT count(*) FROM weekly_reports WHERE needs_review")[0][0]
    assert flagged >= 2
    assert f"{flagged} week(s) need review" in state.message
    summary = _summary(state.state_details.flow_run_id)
    assert f"{flagged} week(s) need review" in summary and "99" in summary

    # The rerun answers every week from the store: it still says so, and each flagged week with its reasons.
    again = backfill_weeks(project_id="XH201", start_week="2025-W28", end_week="2025-W31", return_state=True)
    assert again.message.startswith("nothing to do") and f"{flagged} week(s) need review" in again.message
    lines = [line for line in _summary(again.state_details.flow_run_id).splitlines()
             if line.startswith("- needs review")]
    assert len(lines) == flagged
    assert all("(cached)" in line and "99" in line for line in lines), lines


def test_a_group_with_failed_weeks_is_failed_and_the_run_says_why_without_a_traceback(
        trial: Path, online: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.weekly.outcome import WeeksFailedError

    monkeypatch.setenv("CHRONICLE_LLM_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("CHRONICLE_WEEKS_PER_TASK", "1")  # one task run per week: the failed one is told apart

    def flaky(request: dict[str, Any]) -> str:
        if week_of_request(request) == 202530:
            raise RuntimeError("model crashed on this prompt")
        return cite_first(request)

    online.responder = flaky
    state = backfill_weeks(project_id="XH201", start_week="2025-W29", end_week="2025-W31", return_state=True)
    assert state.is_failed()
    with pytest.raises(WeeksFailedError):  # a Python caller still gets the exception
        state.result()
    run_id = state.state_details.flow_run_id
    with _client() as client:
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id])), limit=50)
    groups = {t.name: t.state for t in tasks if t.name.startswith("summarize-")}
    bad = [name for name, s in groups.items() if "202530" in name]
    assert bad and all(groups[name].is_failed() for name in bad), groups
    assert "1 of 1 week(s) of this group failed" in groups[bad[0]].message
    assert all(s.is_completed() for name, s in groups.items() if name not in bad), groups
    lines = flow_run_logs(run_id, "partly failed")
    assert any("partly failed: 1 of 3 week(s) failed" in line for line in lines), lines
    assert not any("Traceback" in line for line in lines), lines
    assert db_rows("SELECT state FROM pipeline_runs WHERE flow_name = 'backfill-weeks'") == [("FAILED",)]


def test_an_end_week_past_the_last_entry_pads_nothing(trial: Path) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.weeks import IsoWeek

    rows = backfill_weeks(project_id="XH201", start_week="", end_week="2030-W01")
    last_entry = db_rows("SELECT max(week_number) FROM raw_logs WHERE project_id = 'XH201'")[0][0]
    assert max(r.week_number for r in rows) == last_entry
    assert db_rows("SELECT max(week_number) FROM weekly_reports")[0][0] == last_entry
    # A far end week inside the project's span still ends there.
    inside = IsoWeek.from_number(last_entry)
    assert backfill_weeks(project_id="XH201", start_week=str(inside), end_week="2031-W10")[0].outcome == "cached"


def test_a_week_named_that_has_not_ended_pads_nothing(trial: Path) -> None:
    """This week or next, asked for by name where no project has entries (the trial ended long ago): the weekly
    chronicle writes no empty page, and the single-week flow says the week has not ended, not that it is before
    the project began."""
    from datetime import UTC, datetime, timedelta

    from chronicle.flows.summarize_week import summarize_week
    from chronicle.flows.weekly_chronicle import weekly_chronicle
    from chronicle.weeks import IsoWeek

    today = datetime.now(UTC).astimezone(Settings().tz_for("XH201")).date()
    for week in (IsoWeek.of(today), IsoWeek.of(today + timedelta(days=7))):
        state = weekly_chronicle(week=str(week), return_state=True)
        assert state.is_completed() and state.message.startswith("nothing to do"), state.message
        one = summarize_week(project_id="XH201", week=str(week), return_state=True)
        assert one.is_failed() and "has not ended" in one.message, one.message
    assert db_rows("SELECT count(*) FROM weekly_reports") == [(0,)]


def test_overwrite_edited_replaces_only_the_edits_that_existed_when_the_run_planned(trial: Path) -> None:
    from chronicle.services.reports import edit_report
    from chronicle.services.weekly import plan_project, plan_week, run_week
    from chronicle.weeks import IsoWeek

    settings = Settings()

    def edit(week: IsoWeek, text: str, author: str, reason: str) -> None:  # against the version that stands
        [(version,)] = db_rows("SELECT version FROM weekly_reports WHERE project_id = 'XH201' AND week_number = ?",
                               [week.number])
        edit_report(settings, "XH201", week, text, author=author, reason=reason, base_version=version)

    weeks = [IsoWeek.parse(w) for w in ("2025-W28", "2025-W29", "2025-W30")]
    for week in weeks:
        run_week(settings, plan_week(settings, "XH201", week), "first-run")
    edit(weeks[1], "人工修订：本周无异常。", "CRA-李", "typo")
    edit(weeks[2], "人工修订 v1。", "CRA-李", "typo")
    plan = plan_project(settings, "XH201", weeks[0], weeks[2], force=True, overwrite_edited=True)
    assert [job.week for job in plan.to_run] == weeks
    # While the regeneration runs, a human saves edits: a first one on W28, a second one on W30.
    edit(weeks[0], "运行中保存的修订。", "CRA-王", "during the run")
    edit(weeks[2], "人工修订 v2。", "CRA-王", "during the run")
    outcomes = [run_week(settings, job, "regen-run").outcome.outcome for job in plan.to_run]
    assert outcomes == ["skipped-edited", "generated", "skipped-edited"]
    kept = dict(db_rows("SELECT week_number, summary FROM weekly_reports WHERE status = 'edited'"))
    assert kept == {202528: "运行中保存的修订。", 202530: "人工修订 v2。"}


def test_a_retried_run_shows_only_its_own_attempts_artifacts(trial: Path, online: FakeLLMServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.flow_engine import run_flow
    from prefect.states import AwaitingRetry

    from chronicle.flows.backfill_weeks import backfill_weeks

    monkeypatch.setenv("CHRONICLE_LLM_MAX_ATTEMPTS", "1")
    params = {"project_id": "XH201", "start_week": "2025-W29", "end_week": "2025-W31"}

    def flaky(request: dict[str, Any]) -> str:
        if week_of_request(request) == 202530:
            raise RuntimeError("model crashed on this prompt")
        return cite_first(request)

    online.responder = flaky
    with _client() as client:
        run = client.create_flow_run(backfill_weeks, parameters=params)
    assert run_flow(backfill_weeks, flow_run=run, parameters=params, return_type="state").is_failed()
    first = {a.id for a in flow_run_artifacts(run.id)}
    assert first
    # The UI's Retry: the same flow run, put back to AwaitingRetry and run again; this time every week works.
    online.responder = cite_first
    with _client() as client:
        client.set_flow_run_state(run.id, AwaitingRetry(), force=True)
        run = client.read_flow_run(run.id)
    state = run_flow(backfill_weeks, flow_run=run, parameters=params, return_type="state")
    assert state.is_completed(), state
    mine = flow_run_artifacts(run.id)
    assert not first & {a.id for a in mine}
    summaries = [a for a in mine if a.key and a.key.endswith("-summary")]
    assert len(summaries) == 1 and "FAILED" not in str(summaries[0].data)
    assert [r.outcome for r in state.result()] == ["cached", "generated", "cached"]

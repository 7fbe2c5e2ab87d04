"""The deployment registry, prefect.yaml, `chronicle setup` and the typed parameters, against the real API."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from prefect.client.orchestration import get_client
from pydantic import TypeAdapter
from typer.testing import CliRunner

from chronicle.cli.main import app
from chronicle.deployments.definitions import DEPLOYMENTS, WORK_POOL, by_name
from chronicle.deployments.setup import run_setup
from chronicle.deployments.yamlfile import differences
from chronicle.params import OptionalIsoWeekStr
from chronicle.settings import Settings
from tests.deployments.conftest import REPO

EXPECTED = {"ingest-logs/ingest", "weekly-chronicle/weekly-chronicle", "distill-memory/distill-memory",
            "backfill-weeks/backfill-weeks", "backfill-shard/backfill-shard"}


def test_registry_names_the_deployments_and_their_flows_import() -> None:
    assert {s.full_name for s in DEPLOYMENTS} == EXPECTED
    for spec in DEPLOYMENTS:
        assert spec.load_flow().name == spec.flow_name, spec.entrypoint


def test_repo_prefect_yaml_matches_the_registry(settings: Settings) -> None:
    assert differences(REPO / "prefect.yaml", settings) == []


def test_deploy_check_flags_other_settings_and_write_fixes_it(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONICLE_TIMEZONE", "Europe/Berlin")
    monkeypatch.setenv("CHRONICLE_SOURCE_PATHS", '["/data/exports"]')
    problems = differences(REPO / "prefect.yaml", Settings())
    assert any("weekly-chronicle" in p and "Europe/Berlin" in p for p in problems), problems
    assert any("'ingest'" in p and "/data/exports" in p for p in problems), problems

    target = home.parent / "site" / "prefect.yaml"
    target.parent.mkdir()
    runner = CliRunner()
    assert runner.invoke(app, ["deploy-check", "--file", str(target)]).exit_code == 1
    assert runner.invoke(app, ["deploy-check", "--write", "--file", str(target)]).exit_code == 0
    result = runner.invoke(app, ["deploy-check", "--file", str(target)])
    assert result.exit_code == 0, result.output
    target.write_text(target.read_text().replace("0 2 * * 1", "0 3 * * 1"))
    assert runner.invoke(app, ["deploy-check", "--file", str(target)]).exit_code == 1


def _next(schedule, n: int, start: datetime) -> list[datetime]:
    """Next run times as the Prefect server's scheduler computes them."""
    from prefect.server.schemas import schedules as server

    kind = server.CronSchedule if getattr(schedule, "cron", None) else server.IntervalSchedule
    return asyncio.run(kind(**schedule.model_dump()).get_dates(n=n, start=start))


def test_schedules_follow_the_configured_timezone(settings: Settings) -> None:
    tz = ZoneInfo(settings.timezone)
    start = datetime(2026, 3, 4, tzinfo=UTC)

    weekly = by_name("weekly-chronicle").to_runner_deployment(settings).schedules[0].schedule
    runs = [d.astimezone(tz) for d in _next(weekly, 3, start)]
    assert [(d.isoweekday(), d.hour, d.minute) for d in runs] == [(1, 2, 0)] * 3  # Monday 02:00 local
    assert runs[1] - runs[0] == timedelta(weeks=1)

    distill = by_name("distill-memory").to_runner_deployment(settings).schedules[0].schedule
    runs = [d.astimezone(tz) for d in _next(distill, 3, start)]
    assert {(d.hour, d.minute) for d in runs} == {(3, 0)} and runs[2] - runs[0] == timedelta(days=6)

    ingest = by_name("ingest").to_runner_deployment(settings)
    assert ingest.schedules[0].schedule.interval == timedelta(minutes=settings.ingest.interval_minutes)
    assert ingest.schedules[0].active is False  # no source_paths configured: nothing to read yet
    assert not by_name("backfill-weeks").to_runner_deployment(settings).schedules


def test_schedule_descriptions_name_their_timezone(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONICLE_TIMEZONE", "Europe/Berlin")
    for spec in DEPLOYMENTS:
        deployment = spec.to_runner_deployment(Settings())
        if deployment.schedules:  # the UI's schedule badge says "At 02:00 AM, only on Monday", not where
            assert "Europe/Berlin" in deployment.description, (spec.name, deployment.description)
    assert "Every Monday 02:00 Europe/Berlin" in by_name("weekly-chronicle").to_yaml(Settings())["description"]


def test_ingest_reads_configured_source_paths(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONICLE_SOURCE_PATHS", '["/srv/logs", "/srv/notes"]')
    deployment = by_name("ingest").to_runner_deployment(Settings())
    assert deployment.parameters == {"paths": ["/srv/logs", "/srv/notes"]}
    assert deployment.schedules[0].active is True


def test_optional_week_is_text_and_none_reads_as_empty() -> None:
    adapter = TypeAdapter(OptionalIsoWeekStr)
    assert adapter.validate_python(None) == "" and adapter.validate_python("2026-W05") == "2026-W05"
    assert adapter.json_schema()["type"] == "string" and "anyOf" not in adapter.json_schema()


def test_backfill_form_has_plain_text_boxes_that_name_the_format(settings: Settings) -> None:
    schema = by_name("backfill-weeks").to_runner_deployment(settings)._parameter_openapi_schema.model_dump()
    props = schema["properties"]
    for week in ("start_week", "end_week"):
        # A text box (not a `str`/`None` toggle set to None), empty by default, no pattern: the flow checks the
        # value and fails the run naming the problem, so every way of starting a run gets the same answer.
        assert props[week]["type"] == "string" and props[week]["default"] == "", props[week]
        assert "anyOf" not in props[week] and "pattern" not in props[week], props[week]
        assert "YYYY-Www, e.g. 2026-W" in props[week]["description"], props[week]
    for flag in ("only_missing", "force"):
        assert props[flag]["type"] == "boolean" and props[flag].get("description"), flag
    assert props["only_missing"]["default"] is True and props["force"]["default"] is False
    assert props["project_id"]["default"] == "all" and props["project_id"].get("description")
    assert props["max_workers"]["type"] == "integer" and props["max_workers"]["default"] == 0


@pytest.mark.parametrize("spec", DEPLOYMENTS, ids=lambda s: s.name)
def test_no_parameter_is_a_none_toggle(spec, settings: Settings) -> None:
    props = spec.to_runner_deployment(settings)._parameter_openapi_schema.model_dump()["properties"]
    toggles = [name for name, p in props.items() if any(b.get("type") == "null" for b in p.get("anyOf", []))]
    assert not toggles, f"{spec.full_name}: parameters the form shows as a None toggle: {toggles}"


@pytest.mark.parametrize("spec", DEPLOYMENTS, ids=lambda s: s.name)
def test_every_parameter_has_help_text_in_the_form(spec, settings: Settings) -> None:
    props = spec.to_runner_deployment(settings)._parameter_openapi_schema.model_dump()["properties"]
    undocumented = [name for name, p in props.items() if not p.get("description")]
    assert not undocumented, f"{spec.full_name}: parameters without a description: {undocumented}"


def test_setup_is_idempotent_and_corrects_limits(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "3")
    run_setup(Settings())
    second = run_setup(Settings())
    assert all("already" in line for line in second if not line.startswith("alerts: no notification")), second
    monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "5")
    third = run_setup(Settings(), work_pool=False)
    assert any("updated" in line and "'llm'" in line for line in third), third
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name("llm").limit == 5
        assert client.read_global_concurrency_limit_by_name("duckdb-writer").limit == 1
        assert client.read_work_pool(WORK_POOL).type == "process"


def test_prefect_deploy_all_creates_the_four_deployments(home: Path, api_url: str) -> None:
    """The real CLI path a data engineer takes: `chronicle setup` then `prefect deploy --all` from the repo."""
    import os

    run_setup(Settings())
    env = {**os.environ, "PREFECT_API_URL": api_url}
    prefect = str(Path(sys.executable).parent / "prefect")  # this venv's CLI, whatever PATH says
    done = subprocess.run([prefect, "--no-prompt", "deploy", "--all"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with get_client(sync_client=True) as client:
        for spec in DEPLOYMENTS:
            d = client.read_deployment_by_name(spec.full_name)
            assert d.work_pool_name == WORK_POOL and d.entrypoint == spec.entrypoint
            assert d.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": str(REPO)}}]
            if spec.name == "backfill-shard":  # the children of one backfill run side by side
                assert d.global_concurrency_limit is None
            else:
                assert d.global_concurrency_limit is not None and d.global_concurrency_limit.limit == 1
            assert sorted(d.tags) == sorted(spec.tags)
            assert d.job_variables["env"]["PREFECT_LOGGING_EXTRA_LOGGERS"] == "chronicle"
        weekly = client.read_deployment_by_name("weekly-chronicle/weekly-chronicle").schedules[0]
        assert (weekly.schedule.cron, weekly.schedule.timezone, weekly.active) == ("0 2 * * 1", "Asia/Shanghai", True)
        props = client.read_deployment_by_name("backfill-weeks/backfill-weeks").parameter_openapi_schema["properties"]
        assert props["start_week"]["type"] == "string" and "2026-W05" in props["start_week"]["description"]


def test_setup_compares_automation_event_sets_whatever_order_they_come_back_in() -> None:
    """`expect` / `after` are sets: the server may list them in another order than ours, and setup must still
    say "already up to date" (it said "updated" on every run when the orders differed)."""
    from chronicle.deployments.automations import _same, wanted

    ours = wanted(Settings(), None)[0]
    data = ours.model_dump(mode="json")
    data["trigger"]["expect"].reverse()
    data["trigger"]["after"].reverse()

    class FromServer:  # what the client reads back: the same automation, its sets dumped in another order
        def model_dump(self, **_: object) -> dict:
            return {k: v for k, v in data.items() if k in {"name", "description", "enabled", "tags", "trigger",
                                                         "actions"}}

    assert _same(FromServer(), ours)

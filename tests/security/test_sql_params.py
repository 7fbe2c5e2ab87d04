"""SQL built from CLI arguments is parameterised (DuckDB) or quoted (LanceDB filters): hostile project ids and
tags match nothing and drop nothing, while the real values do match (so "nothing matched" means something)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronicle.param_checks import ParameterError
from chronicle.settings import Settings
from tests.fakellm import FakeLLMServer
from tests.security.canaries import TRIAL_PROJECT, write_inputs

runner = CliRunner()
HOSTILE_PROJECTS = [
    "x' OR 1=1; DROP TABLE raw_logs; --",
    f"{TRIAL_PROJECT}' OR '1'='1",
    f'{TRIAL_PROJECT}" OR "1"="1',
    "x'); DELETE FROM weekly_reports; --",
]
HOSTILE_TAGS = ["t']) OR true OR array_has_any(tags, ['t", "x' OR 1=1 --", "'; DROP TABLE memories; --"]
TABLES = ("raw_logs", "weekly_reports", "weekly_report_versions", "memory_events", "distill_chunks", "llm_calls")


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.cli.common import console

    monkeypatch.setattr(console, "_width", 200)


def _cli(*args: str) -> tuple[int, str]:
    from chronicle.cli.main import app

    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _counts() -> dict[str, int]:
    from chronicle.storage.db import connect
    from chronicle.storage.memory.store import MemoryStore

    with connect(Settings()) as conn:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}
    counts["lancedb memories"] = MemoryStore(Settings()).count()
    return counts


def test_hostile_cli_arguments_match_nothing_and_drop_nothing(home: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.flows.ingest_logs import ingest_logs

    monkeypatch.setenv("EMBEDDING_URL", fake_llm.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "fake-embedding")
    ingest_logs([str(write_inputs(tmp_path / "in"))])
    backfill_weeks(project_id="all")
    distill_memory(days=3, until=date(2026, 3, 2))
    before = _counts()
    assert all(v for k, v in before.items() if k != "llm_calls"), before  # offline: no llm_calls

    # Positive controls: the real values match.
    assert _cli("report", "show", "--project", TRIAL_PROJECT, "--week", "2026-W10")[0] == 0
    assert _cli("stats", "--project", TRIAL_PROJECT, "--format", "json")[0] == 0
    assert TRIAL_PROJECT in _cli("weeks", "--project", TRIAL_PROJECT, "--csv")[1]
    code, out = _cli("memory", "search", "王老师", "--tag", "偏好", "--json")
    assert code == 0 and json.loads(out), out

    for project in HOSTILE_PROJECTS:
        # Every command answers an unknown project in one line naming it as given, never a query.
        for args in (("report", "show", "--project", project, "--week", "2026-W10"),
                     ("report", "history", "--project", project, "--week", "2026-W10"),
                     ("report", "list", "--project", project), ("stats", "--project", project, "--format", "json"),
                     ("weeks", "--project", project, "--csv"), ("context", "--project", project)):
            code, out = _cli(*args)
            assert code == 2 and f"unknown project {project!r}" in out, (args, out)
        code, out = _cli("backfill", "--project", project)
        assert code == 2 and f"unknown project {project!r}" in out and "generated" not in out, out  # named as given
        with pytest.raises(ParameterError, match="unknown project"):  # the flow refuses it too, and records that
            backfill_weeks(project_id=project)
        assert _counts() == before, f"tables changed after hostile --project {project!r}"
    for tag in HOSTILE_TAGS:
        for args in (("memory", "search", "王老师", "--tag", tag, "--json"), ("memory", "list", "--tag", tag, "--json"),
                     ("memory", "search", "王老师", "--file", tag, "--json"),
                     ("memory", "list", "--file", f"MEMORY.md' OR '1'='1{tag}", "--json")):
            code, out = _cli(*args)
            assert code == 0 and json.loads(out) == [], (args, out)
    assert _counts() == before

    from chronicle.storage.db import connect

    with connect(Settings()) as conn:  # the hostile ids were stored as values (run parameters), nothing more
        rows = conn.execute("SELECT parameters, state FROM pipeline_runs WHERE flow_name = 'backfill-weeks' "
                            "ORDER BY started_at").fetchall()
        params = [r[0] for r in rows]
        assert [r[1] for r in rows[1:]] == ["FAILED"] * len(HOSTILE_PROJECTS)
        reports = conn.execute("SELECT DISTINCT project_id FROM weekly_reports ORDER BY 1").fetchall()
    assert [json.loads(p)["project_id"] for p in params[1:]] == HOSTILE_PROJECTS
    assert sorted(reports) == sorted([("assistant",), (TRIAL_PROJECT,)])

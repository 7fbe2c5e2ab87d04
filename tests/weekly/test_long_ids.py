"""Names derived from ids are bounded and hashed: a 300-character project_id cannot wedge `backfill --all`.
One helper, `chronicle.names.bounded_name`, makes every such name."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.weekly.conftest import db_rows

LONG_ASCII = "TRIAL-" + "A" * 294
LONG_CJK = "试验" * 150  # 900 bytes in UTF-8


def test_short_safe_names_are_unchanged_and_long_ones_are_cut_and_hashed() -> None:
    from chronicle.names import bounded_name

    assert bounded_name("XH201") == "XH201"
    assert bounded_name("XH201", lower=True) == "xh201"
    cut = bounded_name(LONG_ASCII, limit=64)
    assert len(cut) <= 64 and cut.startswith("TRIAL-AAAA")
    other = bounded_name(LONG_ASCII[:-1] + "B", limit=64)
    assert other != cut and len(other) <= 64  # same visible head, different id: the hash keeps them apart
    cjk = bounded_name(LONG_CJK, limit=64)
    assert len(cjk.encode()) <= 64 and cjk != bounded_name("实验" * 150, limit=64)
    # Replacing characters could merge ids ("a b" / "a-b"), so an altered name carries the hash too.
    assert bounded_name("a b") != bounded_name("a-b") == "a-b"
    assert bounded_name("") and bounded_name("/") != bounded_name("\\")
    assert bounded_name(LONG_ASCII, limit=64) == cut  # deterministic


def _log(tmp: Path, projects: list[str]) -> Path:
    path = tmp / "long.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for project in projects:
            for i, kind in enumerate(["enrollment", "ae", "message", "deviation"]):
                fh.write(json.dumps({"project_id": project, "ts": f"2026-03-0{2 + i}T10:00:00+08:00", "type": kind,
                                     "content": f"{kind} {i}"}, ensure_ascii=False) + "\n")
    return path


def test_backfill_all_with_a_300_character_project_id_succeeds_twice(home: Path, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
    )

    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.ingest_logs import ingest_logs

    ingest_logs([str(_log(tmp_path, [LONG_ASCII, LONG_CJK, LONG_ASCII[:-1] + "B"]))])
    first = backfill_weeks(project_id="all")
    second = backfill_weeks(project_id="all")  # the chart step ran at the end of the first: it must not wedge
    assert {r.outcome for r in first} == {"generated"} and {r.outcome for r in second} == {"cached"}

    charts = sorted((home / "charts").glob("*.png"))
    assert len(charts) == 6  # enrolment + safety for each of the three projects: no two collide
    assert all(len(p.name.encode()) <= 128 for p in charts)

    run_ids = [r[0] for r in db_rows("SELECT flow_run_id FROM pipeline_runs WHERE flow_name = 'backfill-weeks'")]
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=run_ids)))
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=run_ids)))
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=run_ids)))
    assert runs and all(len(r.name) <= 120 for r in runs)
    summarize = [t.name for t in tasks if t.name.startswith("summarize-")]
    assert summarize and all(len(name) <= 120 for name in summarize)
    keys = [a.key for a in arts if a.key]
    assert any(k.startswith("charts-trial-aaaa") for k in keys)
    assert all(len(k) <= 120 for k in keys)


def test_cli_chart_with_a_long_project_id(home: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chronicle.cli.main import app
    from chronicle.flows.ingest_logs import ingest_logs

    ingest_logs([str(_log(tmp_path, [LONG_CJK]))])
    out = tmp_path / "charts"
    result = CliRunner().invoke(app, ["chart", "--project", LONG_CJK, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(os.listdir(out)) == 2


@pytest.mark.parametrize("project", ["../../etc/x", "a/b", "..", ".hidden"])
def test_names_never_leave_their_folder(project: str) -> None:
    from chronicle.names import bounded_name

    name = bounded_name(project)
    assert "/" not in name and "\\" not in name and name not in {".", ".."} and not name.startswith(".")

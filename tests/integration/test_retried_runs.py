"""A retried run (the UI's Retry: the same flow run, run again) shows only its own attempt's artifacts, whichever
flow it is; the weekly flows' retry, with failed weeks fixed, is tests/weekly/test_operator_view.py."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from chronicle.flows.distill_memory import distill_memory
from chronicle.flows.ingest_logs import ingest_logs
from tests.conftest import DATA, flow_run_artifacts


@pytest.mark.parametrize("name", ["ingest-logs", "distill-memory"])
def test_a_retried_run_shows_only_its_own_artifacts(name: str, home: Path, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow
    from prefect.states import AwaitingRetry

    logs = tmp_path / "logs"
    logs.mkdir()
    for src in sorted((DATA / "openclaw" / "memory").glob("*.md")):
        (logs / src.name).write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    (logs / "ops.jsonl").write_text(json.dumps({"project_id": "P", "ts": "2026-01-05T10:00:00+08:00",
                                                "type": "message", "content": "visit"}) + "\n")
    flow, params = ((ingest_logs, {"paths": [str(logs)]}) if name == "ingest-logs" else
                    (distill_memory, {"days": 30, "until": date(2026, 2, 24)}))
    if flow is distill_memory:
        assert ingest_logs([str(logs)], return_state=True).is_completed()
    with get_client(sync_client=True) as client:
        run = client.create_flow_run(flow, parameters=params)
    assert run_flow(flow, flow_run=run, parameters=params, return_type="state").is_completed()
    first = {a.id for a in flow_run_artifacts(run.id)}
    assert first
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(run.id, AwaitingRetry(), force=True)
        run = client.read_flow_run(run.id)
    assert run_flow(flow, flow_run=run, parameters=params, return_type="state").is_completed()
    second = flow_run_artifacts(run.id)
    assert second and not first & {a.id for a in second}
    keys = [a.key for a in second if a.key]
    assert len(keys) == len(set(keys)), keys  # one summary, not one per attempt

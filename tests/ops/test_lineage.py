"""OpenLineage events of real flow runs, POSTed by the openlineage-python client's HTTP transport to a local sink.

Each event is rebuilt with the client's own event classes (generated from the OpenLineage spec; their attrs
validators check the event time, ids and URLs) and must name the spec's schema URL, like the client would write.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.deployments.conftest import write_jsonl
from tests.ops.sink import Sink, http_sink


@pytest.fixture()
def sink(monkeypatch: pytest.MonkeyPatch):
    with http_sink() as s:
        monkeypatch.setenv("OPENLINEAGE_URL", s.url)
        monkeypatch.setenv("OPENLINEAGE_NAMESPACE", "chronicle-test")
        yield s


def parse(body: dict[str, Any]) -> Any:
    """The event as the client's RunEvent; fails on anything the spec's generated model refuses."""
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState

    event = RunEvent(eventType=RunState[body["eventType"]], eventTime=body["eventTime"], producer=body["producer"],
                     run=Run(runId=body["run"]["runId"]), job=Job(body["job"]["namespace"], body["job"]["name"]),
                     inputs=[InputDataset(d["namespace"], d["name"]) for d in body.get("inputs", [])],
                     outputs=[OutputDataset(d["namespace"], d["name"]) for d in body.get("outputs", [])])
    assert body["schemaURL"] == event.schemaURL
    uuid.UUID(body["run"]["runId"])
    for facet in [*body["run"]["facets"].values(),
                  *(f for d in body.get("outputs", []) for f in d.get("outputFacets", {}).values())]:
        assert facet["_producer"] and facet["_schemaURL"].startswith("https://"), facet
    return event


def _events(sink: Sink, run_id: str) -> list[dict[str, Any]]:
    return sink.matching(lambda b: isinstance(b, dict) and b.get("run", {}).get("runId") == run_id)


def test_ingest_and_backfill_emit_paired_events_with_datasets_and_facets(home: Path, sink: Sink, tmp_path: Path):
    from prefect.states import State

    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.ingest_logs import ingest_logs

    logs = tmp_path / "logs" / "XH9.jsonl"
    write_jsonl(logs, "XH9", 40, "lineage")
    ingest: State = ingest_logs([str(logs.parent)], return_state=True)
    backfill: State = backfill_weeks("XH9", "2026-W01", "2026-W02", return_state=True)
    assert ingest.is_completed() and backfill.is_completed()

    ingest_id = str(ingest.state_details.flow_run_id)
    start, complete = _events(sink, ingest_id)
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    for body in (start, complete):
        parse(body)
        assert body["job"] == {"namespace": "chronicle-test", "name": "ingest-logs", "facets": {}}
    assert [d["name"] for d in complete["inputs"]] == [str(logs.parent.resolve())]
    outputs = {d["name"]: d for d in complete["outputs"]}
    assert set(outputs) == {"raw_logs", "rejects"}
    assert outputs["raw_logs"]["namespace"].startswith("duckdb://")
    assert outputs["raw_logs"]["outputFacets"]["outputStatistics"]["rowCount"] == 40
    assert complete["run"]["facets"]["prefect"]["flow_run_id"] == ingest_id
    params = {p["key"]: p["value"] for p in complete["run"]["facets"]["executionParameters"]["parameters"]}
    assert set(params) == {"paths", "project", "force", "replace"}

    backfill_id = str(backfill.state_details.flow_run_id)
    start, complete = _events(sink, backfill_id)
    assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
    parse(complete)
    assert [d["name"] for d in complete["inputs"]] == ["raw_logs"]
    (reports,) = complete["outputs"]
    assert reports["name"] == "weekly_reports"
    assert reports["outputFacets"]["outputStatistics"]["rowCount"] == 2
    assert reports["outputFacets"]["chronicle_partition"] == {
        **reports["outputFacets"]["chronicle_partition"], "projects": ["XH9"], "first_week": "2026-W01",
        "last_week": "2026-W02"}


def test_a_failed_run_sends_fail_with_its_redacted_message(home: Path, sink: Sink):
    from chronicle.flows.backfill_weeks import backfill_weeks

    state = backfill_weeks("no-such-project-13912345678", return_state=True)
    assert state.is_failed()
    run_id = str(state.state_details.flow_run_id)
    start, fail = _events(sink, run_id)
    assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
    parse(fail)
    assert "errorMessage" in fail["run"]["facets"]
    assert "13912345678" not in str(fail)  # a phone number in a parameter never leaves redacted


def test_no_configuration_no_events(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    from chronicle.services import lineage

    for key in [k for k in list(__import__("os").environ) if k.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert lineage.client() is None
    monkeypatch.setenv("OPENLINEAGE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
    assert lineage.client() is None


def test_distill_event_names_notes_memories_and_knowledge_files(settings) -> None:
    """The distill flow's COMPLETE event as built for its run (the flow itself is exercised elsewhere)."""
    from datetime import date
    from types import SimpleNamespace

    from prefect.states import Completed

    from chronicle.distill.summary import DistillSummary
    from chronicle.distill.tally import Tally
    from chronicle.services.lineage import run_event
    from chronicle.settings import KNOWLEDGE_FILES

    summary = DistillSummary(after=date(2026, 3, 1), until=date(2026, 3, 7), engine="offline", model="m",
                             prompt_version="v", tally=Tally(memories=3), store_rows=3)
    run = SimpleNamespace(id=uuid.uuid4(), name="distill-7d", parameters={"days": 7}, deployment_id=None)
    event = run_event(settings, "COMPLETE", "distill-memory", run, Completed(data=summary))
    import json

    from openlineage.client.serde import Serde

    body = json.loads(Serde.to_json(event))
    parse(body)
    assert [d["name"] for d in body["inputs"]] == [str(settings.workspace_dir.resolve() / "memory")]
    names = [d["name"] for d in body["outputs"]]
    assert names[0].endswith("/memories") and names[1:] == [str(settings.workspace_dir.resolve() / n)
                                                            for n in KNOWLEDGE_FILES]
    assert body["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 3

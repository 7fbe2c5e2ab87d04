"""CLI commands over the flow and the store, the demo step, and a run whose LLM goes down midway."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from tests.conftest import flow_run_logs
from tests.distill.conftest import OPENCLAW, ingest
from tests.fakellm import FakeLLMServer, Reply


def test_cli_distill_and_memory_commands(distill_env: Path, notes_dir: Path) -> None:
    from chronicle.cli.main import app

    ingest(notes_dir)
    runner = CliRunner()
    out = runner.invoke(app, ["distill", "--days", "11", "--until", "2026-02-24"])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())  # rich wraps at the terminal width
    assert "engine offline" in text and "USER.md (+3)" in text and "warnings" not in text
    # The canary note's "ignore previous ...": stored flagged, never written, proposed.
    assert "suspected injection: 1 (never written; see proposals)" in text and "memories rejected" not in text

    found = runner.invoke(app, ["memory", "search", "王老师几点看消息", "--json", "--limit", "3"])
    assert found.exit_code == 0, found.output
    hits = json.loads(found.output)
    assert len(hits) == 3 and any("7:30" in h["content"] for h in hits) and "fts_text" not in hits[0]

    filtered = runner.invoke(app, ["memory", "search", "port", "--file", "TOOLS.md", "--min-importance", "0.5",
                                   "--json"])
    assert {h["target_file"] for h in json.loads(filtered.output)} == {"TOOLS.md"}
    tagged = runner.invoke(app, ["memory", "search", "deployment", "--tag", "decision", "--json"])
    assert tagged.output.strip() != "[]" and all("decision" in h["tags"] for h in json.loads(tagged.output))

    tags = runner.invoke(app, ["memory", "tags"])
    assert tags.exit_code == 0 and "偏好" in tags.output
    listed = runner.invoke(app, ["memory", "list", "--limit", "5", "--json"])
    assert len(json.loads(listed.output)) == 5
    reindexed = runner.invoke(app, ["memory", "reindex"])
    assert reindexed.exit_code == 0 and "re-embedded" in reindexed.output

    bad = runner.invoke(app, ["distill", "--until", "24.02.2026"])
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.output


def test_demo_distill_covers_all_ingested_notes(distill_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from chronicle.cli.memory_cmds import DEMO_QUERIES, demo_distill
    from chronicle.settings import Settings
    from chronicle.storage.db import connect

    settings = Settings()
    demo_distill(settings)  # nothing ingested yet: says so instead of failing
    assert "no daily notes" in capsys.readouterr().out
    ingest(OPENCLAW / "memory")
    demo_distill(settings)
    output = capsys.readouterr().out
    with connect(settings) as conn:
        days = conn.execute("SELECT count(DISTINCT note_date) FROM distill_chunks").fetchall()[0][0]
    assert days == 3  # 2026-02-14 .. 2026-02-24, all of them
    assert all(q in output for q in DEMO_QUERIES) and "memory search" in output


def test_llm_outage_keeps_finished_chunks_fails_only_their_task_and_rerun_retries_only_the_failed_one(
    distill_env: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from chronicle.flows.distill_memory import DistillIncomplete, distill_memory
    from chronicle.settings import Settings
    from chronicle.storage.db import connect

    monkeypatch.setenv("LLM_URL", fake_llm.base_url)
    monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "1")  # one chunk at a time: the outage hits the first
    fake_llm.responder = lambda request: json.dumps([{"content": "Bridge runs JWT-only.", "summary": "JWT only",
                                                      "importance": 0.9, "targetFile": "MEMORY.md"}])
    fake_llm.enqueue(Reply(status=503), Reply(status=503))  # both attempts of the first chunk
    ingest(OPENCLAW / "memory")

    run = distill_memory(days=30, until=date(2026, 2, 24), return_state=True)
    assert run.is_failed() and run.message.startswith("DistillIncomplete: 1 of 3 chunks failed"), run.message
    with pytest.raises(DistillIncomplete):  # a Python caller (the CLI) still gets the exception
        run.result()
    # The chunk's task run is Failed, not green; the others are Completed.
    with get_client(sync_client=True) as client:
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(
            any_=[run.state_details.flow_run_id])), limit=50)
    chunks = {t.name: t.state for t in tasks if t.name.startswith("distill ")}
    bad = [name for name, s in chunks.items() if not s.is_completed()]
    assert len(chunks) == 3 and len(bad) == 1, chunks
    assert chunks[bad[0]].is_failed() and "not distilled" in (chunks[bad[0]].message or ""), chunks
    # An expected partial failure: one line on the Logs tab, no traceback.
    lines = flow_run_logs(run.state_details.flow_run_id, "partly failed")
    assert any(line.startswith("partly failed: 1 of 3 chunks failed") for line in lines), lines
    assert not any("Traceback" in line for line in lines), lines
    with connect(Settings()) as conn:
        done = conn.execute("SELECT count(*) FROM distill_chunks").fetchall()[0][0]
        state, counts = conn.execute("SELECT state, counts FROM pipeline_runs WHERE flow_name = 'distill-memory'"
                                     ).fetchall()[0]
    assert done == 2 and state == "FAILED" and json.loads(counts)["chunks_failed"] == 1
    # What the run kept is in the analysts' snapshot, with the run's final row.
    with duckdb.connect(str(distill_env / "chronicle.snapshot.duckdb"), read_only=True) as snap:
        assert snap.execute("SELECT count(*) FROM distill_chunks").fetchall() == [(2,)]
        assert snap.execute("SELECT state FROM pipeline_runs WHERE flow_name = 'distill-memory'").fetchall() == [
            ("FAILED",)]

    calls = fake_llm.calls()
    summary = distill_memory(days=30, until=date(2026, 2, 24))
    assert summary.tally.cached == 2 and summary.tally.distilled == 1 and fake_llm.calls() == calls + 1


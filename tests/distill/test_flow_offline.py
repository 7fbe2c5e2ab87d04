"""End to end with the offline engine: real notes -> DuckDB -> LanceDB + knowledge files, idempotent, no leaks."""

from __future__ import annotations

import logging
from datetime import date
from pathlib import Path

import pytest

from tests.distill.conftest import (
    artifact_markdowns,
    assert_no_canary,
    ingest,
    ledger_text,
    snapshot,
    tree_bytes,
)

UNTIL = date(2026, 2, 24)


def test_offline_distill_is_idempotent_and_leak_free(
    distill_env: Path, notes_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.storage.memory.store import MemoryStore

    from chronicle.settings import Settings

    settings = Settings()
    logging.getLogger("prefect").addHandler(caplog.handler)
    try:
        ingest(notes_dir)
        first = distill_memory(days=11, until=UNTIL)
        files_after_first = snapshot(settings.workspace_dir)
        rows_after_first = MemoryStore(settings).count()
        second = distill_memory(days=11, until=UNTIL)
    finally:
        logging.getLogger("prefect").removeHandler(caplog.handler)

    # Four note days, every chunk distilled once; the rerun finds them all cached and changes nothing.
    assert first.engine == "offline" and first.tally.distilled == first.tally.chunks >= 4
    assert first.tally.events["ADD"] > 40 and first.store_rows == rows_after_first
    assert second.tally.cached == second.tally.chunks and second.tally.distilled == 0
    assert second.as_dict()["events"] == {"ADD": 0, "UPDATE": 0, "NOOP": 0, "REJECT": 0}
    assert MemoryStore(settings).count() == rows_after_first
    assert snapshot(settings.workspace_dir) == files_after_first
    assert not (settings.workspace_dir / ".backups").exists()  # files were new: nothing to back up

    # Every kind was redacted, and both runs report the same counts (the window is re-read each time).
    assert set(first.tally.redactions) >= {"api_key", "jwt", "bearer_token", "private_key", "password", "secret",
                                        "email", "phone", "cn_id", "custom"}
    assert second.tally.redactions == first.tally.redactions

    # Routing by seed 002's keyword table lands memories in several knowledge files, in managed sections.
    written = {p.name for p in settings.workspace_dir.glob("*.md")}
    # AGENTS.md instructs the assistant: its memories wait for approval (issue 21), the file is not written.
    assert {"MEMORY.md", "TOOLS.md", "USER.md"} <= written and "AGENTS.md" not in written
    assert first.tally.proposals >= 1
    user = (settings.workspace_dir / "USER.md").read_text(encoding="utf-8")
    assert "<!-- chronicle:begin 2026-02-16 source=2026-02-16.md -->" in user
    assert "## 🧠 Distilled 2026-02-16 (from 2026-02-16.md)" in user and "7:30" in user
    assert "[REDACTED:phone]" in user

    # No canary anywhere distillation wrote: vectors, knowledge files, ledgers, artifacts, logs.
    lance = tree_bytes(Path(settings.lance_uri))
    assert b"Thread-safe message handling" in lance  # positive control: memory text is greppable
    assert_no_canary(lance, "LanceDB")
    assert_no_canary(tree_bytes(settings.workspace_dir), "knowledge files")
    assert_no_canary(ledger_text(settings), "DuckDB ledgers")
    markdowns = artifact_markdowns()
    assert any("redacted (kind)" in m and "cn_id" in m for m in markdowns)
    for markdown in markdowns:
        assert_no_canary(markdown, "Prefect artifact")
    assert caplog.records, "expected the flow to log"
    assert_no_canary("\n".join(r.getMessage() for r in caplog.records), "logs")


def test_distill_ledgers_and_run_counts(distill_env: Path, notes_dir: Path) -> None:
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.storage.db import connect

    from chronicle.settings import Settings

    settings = Settings()
    ingest(notes_dir)
    summary = distill_memory(days=1, until=date(2026, 2, 16))
    assert summary.as_dict()["window"] == {"after": "2026-02-15", "until": "2026-02-16"}
    with connect(settings) as conn:
        chunk_days = conn.execute("SELECT DISTINCT note_date FROM distill_chunks").fetchall()
        events = conn.execute("SELECT event, count(*) FROM memory_events GROUP BY 1").fetchall()
        counts = conn.execute(
            "SELECT counts FROM pipeline_runs WHERE flow_name = 'distill-memory' AND state = 'COMPLETED'"
        ).fetchall()
    assert chunk_days == [(date(2026, 2, 16),)]  # (until - days, until]: the 15th is outside
    assert dict(events)["ADD"] == summary.tally.events["ADD"] > 0
    assert '"redactions"' in counts[0][0] and '"cn_id": 1' in counts[0][0]

    # A window without notes is a quiet no-op, not an error.
    empty = distill_memory(days=3, until=date(2026, 2, 12))
    assert (empty.tally.entries, empty.tally.chunks, empty.tally.files, empty.tally.events["ADD"]) == (0, 0, {}, 0)

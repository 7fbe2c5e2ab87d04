"""`llm_calls`: every LLM attempt, one row each (model, prompt, response, tokens, latency, status)."""

from __future__ import annotations

from dataclasses import asdict

from chronicle.llm.records import LLMCallRecord
from chronicle.settings import Settings
from storage.db import write

_COLUMNS = ("call_id", "started_at", "model", "endpoint", "purpose", "project_id", "week_number", "prompt_hash",
            "prompt", "response", "tokens_in", "tokens_out", "latency_ms", "status", "error", "http_status",
            "attempt", "flow_run_id")


class DuckDBCallLogger:
    """A `CallLogger` writing to DuckDB in its own short write window per attempt.

    One row per attempt, written as it happens: a run killed mid-backfill still shows what it sent.
    """

    def __init__(self, settings: Settings, flow_run_id: str | None = None) -> None:
        self.settings = settings
        self.flow_run_id = flow_run_id

    def log(self, record: LLMCallRecord) -> None:
        row = asdict(record)
        row["started_at"] = row["started_at"].replace(tzinfo=None) if row["started_at"].tzinfo else row["started_at"]
        row["flow_run_id"] = self.flow_run_id
        placeholders = ", ".join("?" for _ in _COLUMNS)
        # "Insert unless (call_id, attempt) is stored": the portable form of INSERT OR IGNORE (the lake has
        # no keys). Call ids are fresh uuids, so two processes never race for one.
        write(self.settings, lambda conn: conn.execute(
            f"INSERT INTO llm_calls ({', '.join(_COLUMNS)}) SELECT {placeholders} "
            "WHERE NOT EXISTS (SELECT 1 FROM llm_calls WHERE call_id = ? AND attempt = ?)",
            [*(row[c] for c in _COLUMNS), row["call_id"], row["attempt"]],
        ))

"""`llm_calls`: every LLM attempt, one row each (model, prompt, response, tokens, latency, status)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from chronicle.llm.records import LLMCallRecord
from chronicle.settings import Settings
from chronicle.storage.db import json_rows, write

_COLUMNS = ("call_id", "started_at", "model", "endpoint", "purpose", "project_id", "week_number", "prompt_hash",
            "prompt", "response", "tokens_in", "tokens_out", "latency_ms", "status", "error", "http_status",
            "attempt", "flow_run_id")
_TYPES = {"started_at": "TIMESTAMP", "week_number": "INTEGER", "tokens_in": "INTEGER", "tokens_out": "INTEGER",
          "latency_ms": "DOUBLE", "http_status": "INTEGER", "attempt": "INTEGER"}
_INSERT = (f"INSERT INTO llm_calls ({', '.join(_COLUMNS)}) SELECT {', '.join('r.' + c for c in _COLUMNS)} "
           "FROM {rows} WHERE NOT EXISTS "
           "(SELECT 1 FROM llm_calls l WHERE l.call_id = r.call_id AND l.attempt = r.attempt)")

CallRow = tuple[Any, ...]
"""One `llm_calls` row, in the table's column order (`call_row`)."""


def call_row(record: LLMCallRecord, flow_run_id: str | None) -> CallRow:
    # The record's fields as they are (str, int, datetime, None): `dataclasses.asdict` deep-copied each one, ~55 µs
    # an attempt against ~9 µs.
    row = {f.name: getattr(record, f.name) for f in fields(record)}
    row["started_at"] = row["started_at"].replace(tzinfo=None) if row["started_at"].tzinfo else row["started_at"]
    row["flow_run_id"] = flow_run_id
    return tuple(row[c] for c in _COLUMNS)


def insert_calls(conn: Any, rows: Sequence[CallRow]) -> None:
    """Insert rows in the caller's transaction (e.g. with the report they wrote: one write window).

    "Insert unless (call_id, attempt) is stored": the portable form of INSERT OR IGNORE (the lake has no
    keys), so a unit retried after a lake commit conflict, or rows flushed twice, never duplicate. Call ids
    are fresh uuids, so two processes never race for one.
    """
    call_id, attempt = _COLUMNS.index("call_id"), _COLUMNS.index("attempt")
    # One statement for the batch (a group commit carries a few dozen weeks' rows): a statement per row cost
    # a round of binding and planning each. Duplicates inside the batch are dropped here.
    unique = list({(row[call_id], row[attempt]): row for row in rows}.values())
    if not unique:
        return
    rows, params = json_rows(_COLUMNS, unique, _TYPES)  # one bound value for the batch (see `json_rows`)
    conn.execute(_INSERT.format(rows=rows), params)


def write_calls(settings: Settings, rows: Sequence[CallRow]) -> None:
    """Rows in their own short write window (all of them in one)."""
    if rows:
        write(settings, lambda conn: insert_calls(conn, rows))


class DuckDBCallLogger:
    """A `CallLogger` writing to DuckDB in its own short write window per attempt.

    One row per attempt, written as it happens: a run killed mid-backfill still shows what it sent. A week's
    successful attempts are instead held by services/llm_gate.py and written in the week's report commit.
    """

    def __init__(self, settings: Settings, flow_run_id: str | None = None) -> None:
        self.settings = settings
        self.flow_run_id = flow_run_id

    def row(self, record: LLMCallRecord) -> CallRow:
        return call_row(record, self.flow_run_id)

    def log(self, record: LLMCallRecord) -> None:
        write_calls(self.settings, [self.row(record)])

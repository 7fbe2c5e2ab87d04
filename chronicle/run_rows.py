"""A row of the run history (`pipeline_runs`) and how it reads: pure, shared by the CLI and the services."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class RunRow:
    """One flow run as recorded by Chronicle: what ran, how it ended, what it did (counts), why (message)."""

    flow_run_id: str
    flow_name: str
    state: str
    started_at: datetime
    ended_at: datetime | None = None
    run_name: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    counts: Mapping[str, Any] = field(default_factory=dict)
    message: str | None = None
    host: str | None = None
    pid: int | None = None
    pid_started: float | None = None

    @property
    def seconds(self) -> float | None:
        return (self.ended_at - self.started_at).total_seconds() if self.ended_at else None

    @property
    def outcomes(self) -> Mapping[str, int]:
        """Weekly flows: weeks by outcome (generated, cached, skipped-edited, empty, failed)."""
        value = self.counts.get("outcomes")
        return value if isinstance(value, Mapping) else {}

    def summary(self) -> str:
        """What the run did, in a few words (the counts other than the weekly outcomes)."""
        c = self.counts
        parts: list[str] = []
        if self.outcomes:
            shown = ("generated", "cached", "failed")  # columns of their own
            parts += [f"{k} {v}" for k, v in sorted(self.outcomes.items()) if k not in shown]
            if c.get("llm_calls"):
                parts.append(f"LLM calls {c['llm_calls']}")
            if c.get("needs_review"):
                parts.append(f"needs review {c['needs_review']}")
        elif "entries_added" in c:
            rejects = sum((c.get("rejects") or {}).values())
            parts.append(f"files {c.get('files', 0)} {dict(c.get('by_status') or {})}, +{c['entries_added']} entries"
                         + (f", -{c['entries_removed']}" if c.get("entries_removed") else "")
                         + f", {rejects} rejects")
            if c.get("skipped_files"):
                parts.append(f"skipped non-log files {c['skipped_files']}")
        elif "chunks" in c:
            parts.append(f"chunks {c.get('chunks', 0)} (cached {c.get('cached', 0)}), "
                         f"events {dict(c.get('events') or {})}")
        if c.get("notes"):
            parts.append(f"notes: {len(c['notes'])}")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """Every field, with the weekly outcome counts spelled out (the JSON and CSV of `chronicle runs`)."""
        o = self.outcomes
        return {"flow_run_id": self.flow_run_id, "flow_name": self.flow_name, "run_name": self.run_name,
                "state": self.state, "started_at": self.started_at, "ended_at": self.ended_at,
                "seconds": self.seconds, "generated": o.get("generated") if o else None,
                "cached": o.get("cached") if o else None, "failed": o.get("failed") if o else None,
                "summary": self.summary(), "message": self.message, "parameters": dict(self.parameters),
                "counts": dict(self.counts), "host": self.host, "pid": self.pid}

    def table_row(self) -> dict[str, Any]:
        """The columns of the `chronicle runs` table."""
        o = self.outcomes
        took = f"{self.seconds:.1f}s" if self.seconds is not None else "running" if self.state == "RUNNING" else ""
        return {"started (UTC)": f"{self.started_at:%Y-%m-%d %H:%M:%S}", "flow": self.flow_name,
                "run": self.run_name or self.flow_run_id[:8], "state": self.state, "took": took,
                "generated": o.get("generated", 0) if o else "", "cached": o.get("cached", 0) if o else "",
                "failed": o.get("failed", 0) if o else "", "summary": self.summary(), "message": self.message or ""}


def orphaned(rows: Iterable[RunRow], host: str, alive: Callable[[int, float | None], bool]) -> list[RunRow]:
    """RUNNING rows of this host whose process is gone: killed, so they can never finish by themselves.

    Rows of other hosts are left alone (their processes cannot be seen from here), and so are rows
    without a pid (written before Chronicle recorded one).
    """
    return [r for r in rows if r.state == "RUNNING" and r.host == host and r.pid is not None
            and not alive(r.pid, r.pid_started)]


def crashed(row: RunRow, at: datetime) -> RunRow:
    """The row as it reads once its dead process is noticed."""
    return replace(row, state="CRASHED", ended_at=row.ended_at or at, message=crash_message(row))


CANCELLED_MESSAGE = ("cancelled (the Prefect UI's Cancel, or its server stopping the run); what it stored stays "
                     "stored, a rerun does only what is missing")
"""The one line of a cancelled run's row, whichever process recorded it (the run's own, or the one that served it)."""


def crash_message(row: RunRow) -> str:
    return (f"process {row.pid} on {row.host} ended without finishing the run (killed, or the machine stopped); "
            "a rerun redoes only what is missing")

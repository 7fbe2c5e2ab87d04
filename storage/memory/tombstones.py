"""SQL of forgetting and correcting: the `memory_changes` record, the tombstones, their events, and the pending
proposals of a forgotten memory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from chronicle.distill.records import EventRow
from chronicle.memory.forget import Tombstone
from chronicle.storage.memory.events import record_events
from chronicle.weeks import utc_now


@dataclass(frozen=True)
class ChangeRecord:
    """One row of `memory_changes`."""

    change_id: str
    kind: str
    actor: str
    reason: str
    selector: str
    memory_ids: list[str]
    files: list[str]
    backups: list[str]


def tombstoned(conn: duckdb.DuckDBPyConnection, hashes: Iterable[str]) -> dict[str, set[str]]:
    """content hash -> the subjects it is tombstoned with, for those of `hashes` that have any."""
    wanted = sorted(set(hashes))
    if not wanted:
        return {}
    out: dict[str, set[str]] = {}
    rows = conn.execute("SELECT content_hash, subject FROM memory_tombstones WHERE list_contains(?, content_hash)",
                        [wanted]).fetchall()
    for h, subject in rows:
        out.setdefault(h, set()).add(subject)
    return out


def forgotten_ids(conn: duckdb.DuckDBPyConnection, prefix: str) -> list[str]:
    """Ids of forgotten memories equal to, or starting with, `prefix` (an id asked for twice)."""
    rows = conn.execute("SELECT DISTINCT memory_id FROM memory_tombstones WHERE kind = 'forget' "
                        "AND starts_with(memory_id, ?) ORDER BY memory_id", [prefix]).fetchall()
    return [r[0] for r in rows]


def last_change(conn: duckdb.DuckDBPyConnection, kind: str, selector: str, reason: str) -> str | None:
    """The newest change of `kind` made with this selector and reason (as recorded: redacted), if any."""
    rows = conn.execute("""SELECT change_id FROM memory_changes WHERE kind = ? AND selector = ? AND reason = ?
                           ORDER BY "at" DESC LIMIT 1""", [kind, selector, reason]).fetchall()
    return rows[0][0] if rows else None


def record_change(conn: duckdb.DuckDBPyConnection, change: ChangeRecord, stones: list[Tombstone],
                  events: list[EventRow]) -> None:
    """The change, its tombstones (a text tombstoned already keeps its first row) and its events, in the caller's
    transaction; pending proposals of the memories are rejected by the same actor (their text is what went)."""
    now = utc_now()
    conn.execute(
        """INSERT INTO memory_changes (change_id, kind, "at", actor, reason, selector, memory_ids, files, backups)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [change.change_id, change.kind, now, change.actor, change.reason, change.selector, change.memory_ids,
         change.files, change.backups],
    )
    for s in stones:
        conn.execute(
            """INSERT INTO memory_tombstones (content_hash, subject, memory_id, kind, change_id, "at")
               SELECT ?, ?, ?, ?, ?, ? WHERE NOT EXISTS
               (SELECT 1 FROM memory_tombstones WHERE content_hash = ? AND subject = ?)""",
            [s.content_hash, s.subject, s.memory_id, change.kind, change.change_id, now, s.content_hash, s.subject],
        )
    record_events(conn, events)
    if change.kind == "forget" and change.memory_ids:
        conn.execute("UPDATE memory_proposals SET status = 'rejected', decided_at = ?, decided_by = ? "
                     "WHERE status = 'pending' AND list_contains(?, memory_id)", [now, change.actor, change.memory_ids])


def changes(conn: duckdb.DuckDBPyConnection, limit: int = 50) -> list[ChangeRecord]:
    """The latest forget/correct records, newest first."""
    rows = conn.execute("""SELECT change_id, kind, actor, reason, selector, memory_ids, files, backups
                           FROM memory_changes ORDER BY "at" DESC, change_id LIMIT ?""", [limit]).fetchall()
    return [ChangeRecord(r[0], r[1], r[2], r[3], r[4], list(r[5]), list(r[6]), list(r[7])) for r in rows]


def finish_change(conn: duckdb.DuckDBPyConnection, change_id: str, files: list[str], backups: list[str]) -> None:
    """The files a change rewrote and their backups (known once they are written)."""
    conn.execute("UPDATE memory_changes SET files = ?, backups = ? WHERE change_id = ?", [files, backups, change_id])

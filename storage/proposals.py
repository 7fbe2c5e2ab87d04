"""SQL of `memory_proposals`: recording a run's proposals, listing them, recording a human's decision."""

from __future__ import annotations

import duckdb

from chronicle.distill.proposals import ForgetRequest, Proposal, Status
from chronicle.weeks import utc_now

_COLUMNS = ("proposal_id, target_file, action, content, content_hash, importance, tags, note_date, source, "
            "source_entry_ids, memory_id, reason, suspected_injection, status, flow_run_id, created_at, decided_at, "
            "decided_by")


def record_proposals(conn: duckdb.DuckDBPyConnection, proposals: list[Proposal]) -> int:
    """Insert proposals not seen before (a rerun, or the same text again later, keeps the first row and its
    status: a rejected text is not proposed again). Returns how many were new.

    No key constraint does this (the lake has none): the ids present are read first, and each insert is
    guarded by NOT EXISTS as well, inside the caller's transaction."""
    ids = sorted({p.proposal_id for p in proposals})
    if not ids:
        return 0
    have = {r[0] for r in conn.execute("SELECT proposal_id FROM memory_proposals WHERE list_contains(?, proposal_id)",
                                       [ids]).fetchall()}
    new = 0
    for p in proposals:
        if p.proposal_id in have:
            continue
        conn.execute(
            f"""INSERT INTO memory_proposals ({_COLUMNS})
                SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, NULL, NULL
                WHERE NOT EXISTS (SELECT 1 FROM memory_proposals WHERE proposal_id = ?)""",
            [p.proposal_id, p.target_file, p.action, p.content, p.content_hash, p.importance, list(p.tags),
             p.note_date, p.source, list(p.source_entry_ids), p.memory_id, p.reason, p.suspected_injection,
             p.flow_run_id, utc_now(), p.proposal_id],
        )
        have.add(p.proposal_id)
        new += 1
    return new


def list_proposals(conn: duckdb.DuckDBPyConnection, status: Status | None = "pending",
                   ids: list[str] | None = None) -> list[Proposal]:
    """Proposals (oldest first), of one status or all (`status=None`), optionally only these ids."""
    sql, params = f"SELECT {_COLUMNS} FROM memory_proposals WHERE 1 = 1", []
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    if ids is not None:
        sql += " AND list_contains(?, proposal_id)"
        params.append(list(ids))
    rows = conn.execute(sql + " ORDER BY created_at, proposal_id", params).fetchall()
    return [_proposal(r) for r in rows]


def find_proposal(conn: duckdb.DuckDBPyConnection, id_or_prefix: str) -> list[Proposal]:
    """The proposal with this id, or every proposal whose id starts with it (an ambiguous prefix gives several)."""
    exact = list_proposals(conn, None, [id_or_prefix])
    if exact:
        return exact
    rows = conn.execute(f"SELECT {_COLUMNS} FROM memory_proposals WHERE starts_with(proposal_id, ?) "
                        "ORDER BY proposal_id", [id_or_prefix]).fetchall()
    return [_proposal(r) for r in rows]


def decide(conn: duckdb.DuckDBPyConnection, proposal_id: str, status: Status, by: str | None) -> None:
    conn.execute("UPDATE memory_proposals SET status = ?, decided_at = ?, decided_by = ? WHERE proposal_id = ?",
                 [status, utc_now(), by, proposal_id])


def pending_count(conn: duckdb.DuckDBPyConnection) -> int:
    return int(conn.execute("SELECT count(*) FROM memory_proposals WHERE status = 'pending'").fetchall()[0][0])


def _proposal(row: tuple) -> Proposal:
    (pid, target, action, content, chash, importance, tags, day, source, entry_ids, memory_id, reason, suspected,
     status, run, created, decided, by) = row
    return Proposal(pid, target, action, content, chash, float(importance or 0.0), list(tags or []), day, source,
                    list(entry_ids or []), memory_id, reason, bool(suspected), run, status, created, decided, by)


# --- forget requests (an assistant's, decided by a person) ----------------------------------------------------
_FORGET_COLUMNS = ('request_id, memory_id, about, "match", reason, source, status, created_at, decided_at, '
                   'decided_by, change_id')


def record_forget_request(conn: duckdb.DuckDBPyConnection, request: ForgetRequest) -> bool:
    """Insert the request unless a request with its id (the same selector) exists; whether it was new."""
    before = conn.execute("SELECT count(*) FROM memory_forget_requests WHERE request_id = ?",
                          [request.request_id]).fetchall()[0][0]
    conn.execute(
        f"""INSERT INTO memory_forget_requests ({_FORGET_COLUMNS})
            SELECT ?, ?, ?, ?, ?, ?, 'pending', ?, NULL, NULL, NULL
            WHERE NOT EXISTS (SELECT 1 FROM memory_forget_requests WHERE request_id = ?)""",
        [request.request_id, request.memory_id, request.about, request.match, request.reason, request.source,
         utc_now(), request.request_id])
    return not before


def forget_requests(conn: duckdb.DuckDBPyConnection, status: Status | None = "pending",
                    prefix: str | None = None) -> list[ForgetRequest]:
    """Forget requests (oldest first), of one status or all, optionally only those whose id starts with `prefix`."""
    rows = conn.execute(
        f"""SELECT {_FORGET_COLUMNS} FROM memory_forget_requests
            WHERE (? IS NULL OR status = ?) AND (? IS NULL OR starts_with(request_id, ?))
            ORDER BY created_at, request_id""", [status, status, prefix, prefix]).fetchall()
    return [ForgetRequest(*r) for r in rows]


def decide_forget_request(conn: duckdb.DuckDBPyConnection, request_id: str, status: Status, by: str,
                          change_id: str | None) -> None:
    conn.execute("UPDATE memory_forget_requests SET status = ?, decided_at = ?, decided_by = ?, change_id = ? "
                 "WHERE request_id = ?", [status, utc_now(), by, change_id, request_id])

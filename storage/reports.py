"""Stored weekly reports: `weekly_reports` and their versions (reads, versioned writes, edits), and the one
writer of new report text.

The SQL functions take an open connection; callers keep windows short (read -> close -> LLM -> open ->
write). `save_reports` re-reads the row inside the write window, so a human edit that landed while the LLM
was busy is never overwritten. `ReportWriter` (at the end) is the group commit every week's new text goes
through: concurrent week tasks queue their reports and whoever finds no write running commits everything
queued in one short transaction, with the weeks' `llm_calls` rows and, on the embedded file, their claims' end."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import duckdb

from chronicle.storage import claims
from chronicle.storage.db import dict_rows, from_json, held_window, json_rows, transactions
from chronicle.storage.llm_log import CallRow, insert_calls
from chronicle.weekly.model import StoredReport, WeekReport
from chronicle.weeks import utc_now


def _js(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


# --- stored reports --------------------------------------------------------------------------
def stored_reports(conn: duckdb.DuckDBPyConnection, project_id: str, first: int, last: int) -> dict[int, StoredReport]:
    cur = conn.execute(
        """SELECT week_number, id, status, model, prompt_version, input_hash, stale, version, summary, stats,
                  needs_review, review_reasons, llm_stats
           FROM weekly_reports WHERE project_id = ? AND week_number BETWEEN ? AND ?""",
        [project_id, first, last],
    )
    return {r["week_number"]: StoredReport(r["id"], r["status"], r["model"], r["prompt_version"], r["input_hash"],
                                           r["stale"], r["version"], r["summary"], from_json(r["stats"]) or {},
                                           r["needs_review"], from_json(r["review_reasons"]) or [],
                                           from_json(r["llm_stats"]))
            for r in dict_rows(cur)}


def get_report(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int) -> dict[str, Any] | None:
    rows = dict_rows(conn.execute("SELECT * FROM weekly_reports WHERE project_id = ? AND week_number = ?",
                                  [project_id, week_number]))
    if not rows:
        return None
    row = rows[0]
    for key in ("stats", "llm_stats", "citations", "review_reasons"):
        row[key] = from_json(row[key])
    return row


def list_reports(conn: duckdb.DuckDBPyConnection, project_id: str) -> list[dict[str, Any]]:
    cur = conn.execute(
        """SELECT week_number, status, model, stale, needs_review, entry_count, length(summary) AS chars, version,
                  updated_at FROM weekly_reports WHERE project_id = ? ORDER BY week_number""",
        [project_id],
    )
    return dict_rows(cur)


def history(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int) -> list[dict[str, Any]]:
    cur = conn.execute(
        """SELECT version, status, author, reason, model, prompt_version, input_hash, needs_review, review_reasons,
                  created_at, summary FROM weekly_report_versions
           WHERE project_id = ? AND week_number = ? ORDER BY version""",
        [project_id, week_number],
    )
    rows = dict_rows(cur)
    for row in rows:
        row["review_reasons"] = from_json(row["review_reasons"])
    return rows


def chronicle_rows(conn: duckdb.DuckDBPyConnection, project_id: str) -> list[tuple[int, str, str]]:
    """(week_number, summary, stats JSON text) of every report, oldest first; edited text is the summary."""
    return conn.execute(
        "SELECT week_number, summary, stats FROM weekly_reports WHERE project_id = ? ORDER BY week_number",
        [project_id],
    ).fetchall()


def flagged_week_numbers(conn: duckdb.DuckDBPyConnection, project_id: str) -> set[int]:
    """Weeks of a project whose report awaits review (the chronicle block marks or omits them)."""
    rows = conn.execute("SELECT week_number FROM weekly_reports WHERE project_id = ? AND needs_review",
                        [project_id]).fetchall()
    return {r[0] for r in rows}


def report_projects(conn: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT project_id FROM weekly_reports ORDER BY 1").fetchall()]


# --- writes ----------------------------------------------------------------------------------
_REPORT_COLS = ("id", "project_id", "week_number", "iso_year", "iso_week", "start_date", "end_date", "summary",
                "stats", "llm_stats", "citations", "model", "prompt_version", "input_hash", "entry_count", "status",
                "stale", "needs_review", "review_reasons", "version", "flow_run_id", "created_at", "updated_at")
_VERSION_COLS = ("report_id", "project_id", "week_number", "version", "status", "summary", "stats", "citations",
                 "needs_review", "review_reasons", "model", "prompt_version", "input_hash", "author", "reason",
                 "flow_run_id", "created_at")


class ReportWrite(NamedTuple):
    """A freshly written report to store as its week's new version."""

    report: WeekReport
    overwrite_edited: bool
    reason: str
    flow_run_id: str | None
    edit_seen: int | None = None
    """The version of the human edit the run planned over (None: it saw none). `overwrite_edited` replaces that
    edit only: an edit saved while the run was writing is newer than anything the operator agreed to lose."""


Item = ReportWrite


# Types of the columns that are not VARCHAR, for `json_rows` (the JSON columns travel as their text, as before).
_TYPES = {"week_number": "INTEGER", "iso_year": "INTEGER", "iso_week": "INTEGER", "start_date": "DATE",
          "end_date": "DATE", "entry_count": "INTEGER", "stale": "BOOLEAN", "needs_review": "BOOLEAN",
          "version": "INTEGER", "created_at": "TIMESTAMP", "updated_at": "TIMESTAMP", "w": "INTEGER"}


def _keyed(conn: duckdb.DuckDBPyConnection, sql: str, keys: list[tuple[str, int]]) -> list[tuple]:
    """Run `sql` (which joins `k(p, w)`) against the list of (project, week) keys."""
    rows, params = json_rows(("p", "w"), keys, _TYPES)
    return conn.execute(sql.format(keys=f"(SELECT r.p, r.w FROM {rows}) k"), params).fetchall()


def _insert(conn: duckdb.DuckDBPyConnection, table: str, cols: tuple[str, ...], rows: list[tuple]) -> None:
    source, params = json_rows(cols, rows, _TYPES)
    conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join('r.' + c for c in cols)} FROM {source}",
                 params)


def writers_of(conn: duckdb.DuckDBPyConnection, keys: list[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
    """The flow run that wrote each (project, week)'s current report (weeks without a report are absent)."""
    if not keys:
        return {}
    return {(p, w): run for p, w, run in _keyed(
        conn, "SELECT r.project_id, r.week_number, r.flow_run_id FROM weekly_reports r "
              "JOIN {keys} ON r.project_id = k.p AND r.week_number = k.w", keys)}


def count_written_by(conn: duckdb.DuckDBPyConnection, run_ids: list[str]) -> int:
    """How many current reports these flow runs wrote."""
    return conn.execute("SELECT count(*) FROM weekly_reports WHERE list_contains(?, flow_run_id)",
                        [run_ids]).fetchone()[0]


def guard_keys(project_ids: Iterable[str]) -> list[str]:
    """Claim keys for writing reports of these projects: versions and the one-row-per-week rule need
    writers of one project to take turns in the lake (the embedded file lock already does that)."""
    return [f"reports:{p}" for p in sorted(set(project_ids))]


def save_reports(conn: duckdb.DuckDBPyConnection, items: list[Item]) -> list[str]:
    """Store freshly written reports as their weeks' new versions; one outcome per item, in order.

    A week holding a human edit is `skipped-edited` unless the write may overwrite that very edit (`edit_seen`):
    the edit stays, marked stale if the inputs it was written against have changed since. One statement per
    table for the whole batch: a row-by-row upsert costs ~4 ms, the batch about that in all.
    """
    writes = [ReportWrite(*item) for item in items]
    keys = list(dict.fromkeys((w.report.project_id, w.report.week.number) for w in writes))
    stored = _keyed(conn, "SELECT r.project_id, r.week_number, r.id, r.status, r.input_hash, r.created_at, "
                          "r.version FROM weekly_reports r JOIN {keys} ON r.project_id = k.p AND r.week_number = k.w",
                    keys)
    current = {(p, w): (i, st, h) for p, w, i, st, h, _c, _v in stored}
    created = {(p, w): c for p, w, _i, _s, _h, c, _v in stored}  # a replaced row keeps its creation time
    edits = {(p, w): v for p, w, _i, st, _h, _c, v in stored if st == "edited"}
    versions = {(p, w): v for p, w, v in _keyed(
        conn, "SELECT v.project_id, v.week_number, max(v.version) FROM weekly_report_versions v "
              "JOIN {keys} ON v.project_id = k.p AND v.week_number = k.w GROUP BY ALL", keys)}
    now = utc_now()
    outcomes: list[str] = []
    reports: dict[tuple[str, int], tuple] = {}  # the last write of a week in this batch wins
    history: list[tuple] = []
    for report, overwrite_edited, reason, flow_run_id, edit_seen in writes:
        key, w = (report.project_id, report.week.number), report.week
        report_id, status, old_hash = current.get(key, (None, None, None))
        if status == "edited" and not (overwrite_edited and edits.get(key) == edit_seen):
            conn.execute("UPDATE weekly_reports SET stale = ?, stats = ?, updated_at = ? WHERE id = ?",
                         [old_hash != report.input_hash, _js(report.stats), now, report_id])
            outcomes.append("skipped-edited")
            continue
        report_id = report_id or str(uuid.uuid4())
        versions[key] = version = versions.get(key, 0) + 1
        current[key] = (report_id, "generated", report.input_hash)
        shared = (_js(report.stats), _js(report.citations))
        reasons = _js(report.review_reasons)
        reports[key] = (report_id, *key, w.year, w.week, w.start_date, w.end_date, report.summary, shared[0],
                        _js(report.llm_stats), shared[1], report.model, report.prompt_version, report.input_hash,
                        report.entry_count, "generated", False, report.needs_review, reasons, version, flow_run_id,
                        created.get(key, now), now)
        history.append((report_id, *key, version, "generated", report.summary, *shared, report.needs_review,
                        reasons, report.model, report.prompt_version, report.input_hash, f"engine:{report.model}",
                        reason, flow_run_id, now))
        outcomes.append("empty" if report.engine == "empty" else "generated")
    if reports:
        # Replace the weeks' rows: delete + insert in the caller's transaction is one change on both
        # backends (the lake has no unique key to upsert on; `guard_keys` keeps two writers apart).
        source, params = json_rows(("p", "w"), list(reports), _TYPES)
        conn.execute(f"DELETE FROM weekly_reports WHERE EXISTS (SELECT 1 FROM {source} "
                     "WHERE r.p = weekly_reports.project_id AND r.w = weekly_reports.week_number)", params)
        _insert(conn, "weekly_reports", _REPORT_COLS, list(reports.values()))
        _insert(conn, "weekly_report_versions", _VERSION_COLS, history)
    return outcomes


def _next_version(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int) -> int:
    return conn.execute(
        "SELECT coalesce(max(version), 0) + 1 FROM weekly_report_versions WHERE project_id = ? AND week_number = ?",
        [project_id, week_number],
    ).fetchall()[0][0]


class StaleBase(Exception):
    """An edit made against a version that is no longer the week's current one (nothing was written)."""

    def __init__(self, base_version: int, base_text: str, current_version: int, current_text: str) -> None:
        super().__init__(f"version {base_version} is no longer current (now {current_version})")
        self.base_version, self.base_text = base_version, base_text
        self.current_version, self.current_text = current_version, current_text


def version_text(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int, version: int) -> str | None:
    """The exact text of one stored version of a week (what an edit was made against, what a signature is bound
    to)."""
    rows = conn.execute("SELECT summary FROM weekly_report_versions WHERE project_id = ? AND week_number = ? "
                        "AND version = ?", [project_id, week_number, version]).fetchall()
    return rows[0][0] if rows else None


def save_edit(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int, summary: str, *,
              citations: dict[str, str], input_hash: str, stats: dict[str, Any], author: str,
              reason: str, base_version: int, review_reasons: list[dict[str, Any]],
              flagged_reason: dict[str, Any] | None = None) -> int:
    """Store a human correction as the week's new version (the truth from now on); returns its number.

    Written only when the week's current text is still `base_version`'s (else StaleBase, nothing written):
    whatever changed meanwhile (another edit, a regeneration) is never overwritten unseen. A later version with
    the same text (a forced regeneration that wrote what was there) is no conflict — the person corrected exactly
    the text that stands, as a three-way merge would see it. Earlier versions are never touched — a new row is
    added. The edit is flagged when the guard found `review_reasons` in it,
    and stays flagged (with `flagged_reason`) when the version it replaces was: only a sign-off clears a flag.
    """
    current = get_report(conn, project_id, week_number)
    if current is None:
        raise LookupError(f"no report for {project_id} week {week_number}; generate it first")
    if current["version"] != base_version:
        base = version_text(conn, project_id, week_number, base_version)
        if base is None or base != current["summary"] or summary == current["summary"]:
            raise StaleBase(base_version, base or "", current["version"], current["summary"])
    reasons = list(review_reasons)
    if current["needs_review"] and not reasons and flagged_reason is not None:
        reasons.append(flagged_reason)
    now, version = utc_now(), _next_version(conn, project_id, week_number)
    stats_js, cites_js, reasons_js = _js(stats), _js(citations), _js(reasons)
    conn.execute(
        """UPDATE weekly_reports SET summary = ?, stats = ?, citations = ?, status = 'edited', stale = false,
               needs_review = ?, review_reasons = ?, input_hash = ?, version = ?, updated_at = ? WHERE id = ?""",
        [summary, stats_js, cites_js, bool(reasons), reasons_js, input_hash, version, now, current["id"]],
    )
    _insert(conn, "weekly_report_versions", _VERSION_COLS, [(
        current["id"], project_id, week_number, version, "edited", summary, stats_js, cites_js, bool(reasons),
        reasons_js, current["model"], current["prompt_version"], input_hash, author, reason, current["flow_run_id"],
        now)])
    return version


def refresh(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int, *, stats: dict[str, Any],
            stale: bool | None = None, review_reasons: list[dict[str, Any]] | None = None) -> None:
    """Update what changes without new text: stats (e.g. enrolled_total), staleness, review flags."""
    sets, args = ["stats = ?", "updated_at = ?"], [_js(stats), utc_now()]
    if stale is not None:
        sets.append("stale = ?")
        args.append(stale)
    if review_reasons is not None:
        sets += ["needs_review = ?", "review_reasons = ?"]
        args += [bool(review_reasons), _js(review_reasons)]
    conn.execute(f"UPDATE weekly_reports SET {', '.join(sets)} WHERE project_id = ? AND week_number = ?",
                 [*args, project_id, week_number])


def mark_stale(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int) -> None:
    conn.execute("UPDATE weekly_reports SET stale = true, updated_at = ? WHERE project_id = ? AND week_number = ?",
                 [utc_now(), project_id, week_number])


# --- the writer of new report text ----------------------------------------------------------
class Queued(NamedTuple):
    """A report to store, the week's claim that ends with its commit, and the LLM attempts that wrote it."""

    write: ReportWrite
    lease: claims.Lease | None = None
    calls: Sequence[CallRow] = ()


class _Ticket:
    __slots__ = ("args", "calls", "done", "error", "lease", "outcome")

    def __init__(self, args: ReportWrite, lease: claims.Lease | None = None,
                 calls: Sequence[CallRow] = ()) -> None:
        self.args = args
        self.lease = lease
        self.calls = calls
        self.done = False
        self.outcome: str | None = None
        self.error: BaseException | None = None


class ReportWriter:
    """Group commit for concurrent week tasks: whoever arrives while no write is running writes
    everything queued so far in ONE short transaction; the others wait for it.

    Opening DuckDB costs ~12 ms, so one window per report would serialise a backfill on the file
    lock; each caller still returns only once its own row is committed (nothing is lost on a crash).
    A failing batch is retried row by row, so one bad report cannot fail its neighbours. Batches queued back to
    back share a window for up to `HOLD_S` (attach and checkpoint were most of a window's cost)."""

    HOLD_S = 0.25  # a process waiting for the file waits at most this much longer than for one window

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self._cond = threading.Condition()
        self._queue: list[_Ticket] = []
        self._writing = False

    def save_many(self, items: Sequence[Queued]) -> list[str | BaseException]:
        """Store a group of reports in one window, with whatever other callers queued meanwhile; one outcome per
        item, or the error of that item (the group is retried row by row when its commit fails). Each report is
        stored with the `llm_calls` rows of the attempts that wrote it (same transaction), and its lease (the
        week's claim) ends with it: in the same transaction on the embedded file, right after the commit in the
        lake (claims live in PostgreSQL)."""
        if not items:
            return []
        tickets = [_Ticket(q.write, q.lease, q.calls) for q in items]
        with self._cond:
            self._queue.extend(tickets)
            while self._writing and not all(t.done for t in tickets):
                self._cond.wait()
            batch: list[_Ticket] | None = None
            if not all(t.done for t in tickets):
                batch, self._queue, self._writing = self._queue, [], True
        if batch is not None:
            try:
                self._flush_queued(batch)
            finally:
                with self._cond:
                    self._writing = False
                    self._cond.notify_all()
        out: list[str | BaseException] = []
        for t in tickets:
            if t.error is not None:
                out.append(t.error)
                continue
            if t.lease is not None and self.settings.lake.enabled:
                t.lease.leases.finish([t.lease.key])  # in PostgreSQL: ended by this caller after the commit
            assert t.outcome is not None
            out.append(t.outcome)
        return out

    def _flush_queued(self, batch: list[_Ticket]) -> None:
        """Commit `batch`, then each batch queued meanwhile, in one `held_window` until a row fails (fresh window)."""
        until = time.monotonic() + self.HOLD_S
        with held_window(self.settings):
            while batch:
                self._flush(batch)
                keep = time.monotonic() < until and all(t.error is None for t in batch)
                with self._cond:  # this batch's callers go on while the next one commits
                    self._cond.notify_all()
                    batch, self._queue = (self._queue, []) if keep else ([], self._queue)

    def _write(self, tickets: list[_Ticket]) -> None:
        guard = guard_keys(t.args.report.project_id for t in tickets)
        leases: dict[claims.Leases, list[str]] = {}
        if not self.settings.lake.enabled:  # the claims live in this file: end them in the same commit
            for t in tickets:
                if t.lease is not None:
                    leases.setdefault(t.lease.leases, []).append(t.lease.key)
            for held, keys in leases.items():
                held.forget(keys)  # no heartbeat renews them from here on
        for attempt in transactions(self.settings, guard=guard):
            with attempt as conn:
                outcomes = save_reports(conn, [t.args for t in tickets])
                insert_calls(conn, [row for t in tickets for row in t.calls])
                for held, keys in leases.items():
                    claims.finish_in(conn, keys, held.owner)
        for t, outcome in zip(tickets, outcomes, strict=True):
            t.outcome, t.done = outcome, True

    def _flush(self, batch: list[_Ticket]) -> None:
        try:
            try:
                self._write(batch)
                return
            except Exception:
                if len(batch) == 1:
                    raise
            for t in batch:
                try:
                    self._write([t])
                except Exception as exc:
                    t.error, t.done = exc, True
        except BaseException as exc:
            # Nobody may wait forever on a ticket: every unfinished one gets the error.
            for t in batch:
                if not t.done:
                    t.error, t.done = exc, True
            if not isinstance(exc, Exception):
                raise


_writers: dict[Any, ReportWriter] = {}
_writers_lock = threading.Lock()


def writer_for(settings: Any) -> ReportWriter:
    """The process's writer for this database file."""
    with _writers_lock:
        writer = _writers.get(settings.db_path)
        if writer is None or writer.settings is not settings:
            writer = _writers[settings.db_path] = ReportWriter(settings)
        return writer

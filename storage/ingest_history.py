"""What the source changing may do to stored rows: never delete them silently.

A file re-read whole keeps the rows its new version still has and moves the others to `raw_logs_superseded`
(with the run and time); entries that another file already holds are stored once (`content_key`); the weeks
whose rows changed have their reports marked stale. Every function works on a whole batch in a few statements.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import pyarrow as pa

from chronicle.storage.db import dict_rows

_COLUMNS = ("entry_id, project_id, source, source_file, line_no, byte_offset, ts, local_date, iso_year, iso_week, "
            "week_number, actor, type, content, metadata, ingested_at, file_id, content_key")

CONTENT_KEY_SQL = """(md5_number(concat_ws(chr(31), {p}project_id, epoch_us({p}ts)::VARCHAR, coalesce({p}actor, ''),
    {p}type, {p}content, coalesce({sid}, ''))) >> 1)::HUGEINT"""
"""An entry's identity whichever file it came from (format with `p` = column prefix, `sid` = the source's id)."""


@dataclass
class BatchChanges:
    """What the history rules did in one write window, by file identity."""

    superseded: dict[str, int] = field(default_factory=dict)
    superseded_at_path: dict[str, int] = field(default_factory=dict)  # by the path the rows were read from
    weeks_of: dict[str, set[int]] = field(default_factory=dict)  # file id or path -> weeks superseded
    duplicates: dict[str, dict[str, int]] = field(default_factory=dict)  # file id -> {file it repeats: n}
    stale_weeks: list[tuple[str, int]] = field(default_factory=list)


def strings(values: Sequence[str], column: str = "id") -> pa.Table:
    return pa.table({column: pa.array(list(values), pa.string())})


@contextlib.contextmanager
def registered(conn: duckdb.DuckDBPyConnection, **tables: pa.Table) -> Iterator[None]:
    """The Arrow tables as views of `conn` for the block, unregistered after it."""
    try:
        for name, table in tables.items():
            conn.register(name, table)
        yield
    finally:
        # After a failed statement the transaction is aborted and unregister raises too; the first error matters.
        for name in tables:
            with contextlib.suppress(duckdb.Error):
                conn.unregister(name)


def take_prior(conn: duckdb.DuckDBPyConnection, file_ids: Sequence[str], replaced_paths: Sequence[str] = ()) -> None:
    """Move the rows of files about to be re-read whole into the temp table `prior` (out of raw_logs).

    `replaced_paths`: every row read from these paths goes too, whatever content it came from (`--replace`)."""
    conn.execute(f"CREATE OR REPLACE TEMP TABLE prior AS SELECT {_COLUMNS}, false AS replaced FROM raw_logs "
                 "WHERE false")
    if not file_ids and not replaced_paths:
        return
    with registered(conn, prior_ids=strings(file_ids), prior_paths=strings(replaced_paths)):
        where = "file_id IN (SELECT id FROM prior_ids) OR source_file IN (SELECT id FROM prior_paths)"
        conn.execute(f"INSERT INTO prior SELECT {_COLUMNS}, source_file IN (SELECT id FROM prior_paths) "
                     f"FROM raw_logs WHERE {where}")
        conn.execute(f"DELETE FROM raw_logs WHERE {where}")


def settle_prior(conn: duckdb.DuckDBPyConnection, now: datetime, run_id: str, changes: BatchChanges) -> None:
    """Rows of `prior` the new read stored again stay as they were (their first `ingested_at`); the others are
    superseded (reason `replaced` for `--replace`, `rewritten` otherwise)."""
    conn.execute("""UPDATE raw_logs SET ingested_at = p.ingested_at FROM prior p
                    WHERE raw_logs.entry_id = p.entry_id AND raw_logs.file_id = p.file_id""")
    gone = "FROM prior p WHERE NOT EXISTS (SELECT 1 FROM raw_logs r WHERE r.entry_id = p.entry_id)"
    _supersede(conn, f"SELECT {_COLUMNS}, CASE WHEN replaced THEN 'replaced' ELSE 'rewritten' END AS why {gone}",
               now, run_id, changes)
    conn.execute("DROP TABLE prior")


def _supersede(conn: duckdb.DuckDBPyConnection, select: str, now: datetime, run_id: str,
               changes: BatchChanges) -> None:
    conn.execute(f"CREATE OR REPLACE TEMP TABLE gone AS {select}")
    conn.execute(f"INSERT INTO raw_logs_superseded ({_COLUMNS}, superseded_at, superseded_by, reason) "
                 f"SELECT {_COLUMNS}, ?, ?, why FROM gone", [now, run_id])
    conn.execute("DELETE FROM raw_logs WHERE entry_id IN (SELECT entry_id FROM gone)")
    for file_id, path, week, n in conn.execute("SELECT file_id, source_file, week_number, count(*) FROM gone "
                                               "GROUP BY ALL").fetchall():
        changes.superseded[file_id] = changes.superseded.get(file_id, 0) + n
        changes.superseded_at_path[path] = changes.superseded_at_path.get(path, 0) + n
        changes.weeks_of.setdefault(file_id, set()).add(week)
        changes.weeks_of.setdefault(path, set()).add(week)
    changes.stale_weeks.extend(conn.execute("SELECT DISTINCT project_id, week_number FROM gone").fetchall())
    conn.execute("DROP TABLE gone")


def drop_duplicates(conn: duckdb.DuckDBPyConnection, file_ids: Sequence[str], now: datetime,
                    changes: BatchChanges) -> None:
    """Rows just stored (at `now`) for `file_ids` whose entry another file holds — stored before, or earlier in
    this batch's order — are removed again and counted as duplicates of that file. Repeats within one file stay."""
    if not file_ids:
        return
    # The batch's files and their order as a table: a join, not a 2,000-item list searched on every row.
    batch = pa.table({"id": pa.array(list(file_ids), pa.string()), "pos": pa.array(range(len(file_ids)), pa.int32())})
    mine = "ingested_at = $now AND file_id IN (SELECT id FROM batch_ids)"
    params = {"now": now}
    with registered(conn, batch_ids=batch):
        if len(file_ids) == 1 and not conn.execute(f"SELECT EXISTS (SELECT 1 FROM raw_logs WHERE NOT ({mine}))",
                                                   params).fetchall()[0][0]:
            # One file into an empty store: nothing it could repeat.
            conn.execute("CREATE OR REPLACE TEMP TABLE dups AS SELECT '' AS entry_id, '' AS file_id, "
                         "NULL::HUGEINT AS content_key, '' AS of_id WHERE false")
            return
        conn.execute(f"""CREATE OR REPLACE TEMP TABLE dups AS
WITH n AS (SELECT entry_id, file_id, content_key, pos FROM raw_logs JOIN batch_ids ON file_id = id
           WHERE ingested_at = $now),
old AS (SELECT DISTINCT content_key, file_id AS of_id FROM raw_logs
        WHERE content_key IN (SELECT content_key FROM n) AND NOT ({mine})),
b AS (SELECT content_key, min(pos) AS first_pos, arg_min(file_id, pos) AS of_id FROM n GROUP BY content_key
      HAVING count(DISTINCT file_id) > 1),
hit AS (SELECT n.entry_id, n.file_id, n.content_key, old.of_id FROM n
        JOIN old ON old.content_key = n.content_key AND old.of_id <> n.file_id
        UNION ALL
        SELECT n.entry_id, n.file_id, n.content_key, b.of_id FROM n JOIN b USING (content_key)
        WHERE n.pos > b.first_pos)
SELECT entry_id, file_id, content_key, min(of_id) AS of_id FROM hit GROUP BY ALL""", params)
    conn.execute("DELETE FROM raw_logs WHERE entry_id IN (SELECT entry_id FROM dups)")
    for file_id, of_id, n in conn.execute("SELECT file_id, of_id, count(*) FROM dups GROUP BY 1, 2").fetchall():
        changes.duplicates.setdefault(file_id, {})[of_id] = n


def supersede_rewritten(conn: duckdb.DuckDBPyConnection, pairs: dict[str, str], now: datetime, run_id: str,
                        changes: BatchChanges) -> None:
    """New content at a path that held other content (`pairs`: new file id -> old file id). When the new content
    repeats entries of the old (a corrected export), it is a rewrite: the old entries it no longer has are
    superseded. When it shares nothing (`copytruncate`, a truncation, a fresh log) the old rows are history
    and stay. Call after `drop_duplicates` (whose `dups` table says what the new content repeats)."""
    for new_id, old_id in pairs.items():
        overlap = conn.execute("SELECT count(*) FROM dups WHERE file_id = ? AND of_id = ?", [new_id, old_id]).fetchall()
        if not overlap[0][0]:
            continue
        keys = ("SELECT content_key FROM raw_logs WHERE file_id = $new "
                "UNION SELECT content_key FROM dups WHERE file_id = $new")
        conn.execute(f"CREATE OR REPLACE TEMP TABLE rewrite_gone AS SELECT {_COLUMNS}, 'rewritten' AS why "
                     f"FROM raw_logs WHERE file_id = $old AND content_key NOT IN ({keys})",
                     {"new": new_id, "old": old_id})
        _supersede(conn, "SELECT * FROM rewrite_gone", now, run_id, changes)
        conn.execute("DROP TABLE rewrite_gone")


def finish_batch(conn: duckdb.DuckDBPyConnection, changes: BatchChanges, now: datetime) -> None:
    """Reports of the weeks whose rows were superseded are stale (they regenerate on the next weekly run)."""
    with contextlib.suppress(duckdb.Error):
        conn.execute("DROP TABLE dups")
    weeks = sorted(set(changes.stale_weeks))
    changes.stale_weeks = weeks
    if weeks:
        stale = pa.table({"project_id": [p for p, _ in weeks], "week_number": [w for _, w in weeks]})
        with registered(conn, stale_weeks=stale):
            conn.execute("""UPDATE weekly_reports SET stale = true, updated_at = ? FROM stale_weeks s
                            WHERE weekly_reports.project_id = s.project_id
                              AND weekly_reports.week_number = s.week_number""",
                         [now])


def taken_ids(conn: duckdb.DuckDBPyConnection, paths: Sequence[str]) -> set[str]:
    """Which of `paths` already name a file identity (rows or a file state use it)."""
    if not paths:
        return set()
    with registered(conn, maybe_taken=strings(paths)):
        rows = conn.execute("""SELECT id FROM maybe_taken WHERE id IN (SELECT file_id FROM ingest_files)
                               OR id IN (SELECT DISTINCT file_id FROM raw_logs
                                         WHERE file_id IN (SELECT id FROM maybe_taken))""").fetchall()
    return {r[0] for r in rows}


def known_heads(conn: duckdb.DuckDBPyConnection, heads: Sequence[tuple[int, str]]) -> dict[tuple[int, str], dict]:
    """The stored file state (the one read furthest) of each identity whose head is among `heads`."""
    if not heads:
        return {}
    wanted = pa.table({"head_len": pa.array([h[0] for h in heads], pa.int64()),
                       "head_sha256": pa.array([h[1] for h in heads], pa.string())})
    with registered(conn, wanted_heads=wanted):
        cur = conn.execute("""SELECT f.* FROM ingest_files f JOIN wanted_heads w USING (head_len, head_sha256)
                              WHERE f.file_id IS NOT NULL
                              QUALIFY row_number() OVER (PARTITION BY f.file_id
                                                         ORDER BY f.parsed_bytes DESC, f.path) = 1""")
        rows = dict_rows(cur)
    return {(r["head_len"], r["head_sha256"]): r for r in rows}

"""The bad-input corpus: every file is ingested or quarantined with a reason; nothing crashes.

JSON is parsed by DuckDB, which tolerates a trailing comma (`{"a": 1,}`): that line is then refused
for its missing project, not as invalid JSON.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb

from chronicle.flows.ingest_logs import ingest_logs
from tests.conftest import DATA

EXPECTED_REJECTS = {
    "invalid_utf8": 1, "invalid_json": 2, "missing_project": 1, "invalid_timestamp": 3, "future_timestamp": 1,
    "missing_timestamp": 1,
    "empty_file": 2, "binary_file": 1, "invalid_date": 1, "csv_field_count": 1, "not_an_object": 3,
    "line_too_long": 1,
}
EXPECTED_ENTRIES = {
    "latin1_line.jsonl": 2, "utf16_bom.jsonl": 2, "crlf.jsonl": 3, "broken_json.jsonl": 2, "bad_timestamps.jsonl": 1,
    "deeply_nested.jsonl": 1, "2026-01-05.md": 2, "ragged.csv": 1, "ten_mb_line.jsonl": 2, "large.jsonl": 300_000,
}


def _generate_large(dst: Path) -> None:
    good = json.dumps({"project_id": "BAD", "ts": "2026-01-05T10:00:00Z", "content": "ok"})
    huge = json.dumps({"project_id": "BAD", "ts": "2026-01-05T10:00:00Z", "content": "x" * 10_000_000})
    (dst / "ten_mb_line.jsonl").write_text(f"{good}\n{huge}\n{good}\n")
    with (dst / "large.jsonl").open("w") as fh:
        for i in range(300_000):
            fh.write(json.dumps({"project_id": "BIG", "ts": f"2026-01-{1 + i % 28:02d}T10:00:00+08:00",
                                 "type": "message", "content": f"line {i}"}) + "\n")


def test_bad_input_corpus(home: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "bad"
    shutil.copytree(DATA / "bad", corpus)
    _generate_large(corpus)
    summary = ingest_logs([str(corpus)])
    assert summary.files == 15 and summary.skipped_files == 1  # README.md is not a log
    assert summary.rejects == EXPECTED_REJECTS
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        per_file = dict(conn.execute(
            "SELECT regexp_extract(source_file, '[^/]+$'), count(*) FROM raw_logs GROUP BY 1").fetchall())
        stored = dict(conn.execute("SELECT reason, count(*) FROM rejects GROUP BY 1").fetchall())
        dupes = conn.execute("SELECT count(*) - count(DISTINCT entry_id) FROM raw_logs").fetchall()[0][0]
        nested = conn.execute("SELECT json_extract(metadata, '$.payload.n.n.n') IS NOT NULL FROM raw_logs "
                              "WHERE content = '深层嵌套'").fetchall()
        crlf = conn.execute("SELECT content FROM raw_logs WHERE content LIKE 'CRLF%' ORDER BY 1").fetchall()
        kept = conn.execute("SELECT length(raw) FROM rejects WHERE reason = 'line_too_long'").fetchall()[0][0]
    assert per_file == EXPECTED_ENTRIES
    assert stored == EXPECTED_REJECTS
    assert dupes == 0
    assert nested == [(True,)]
    assert [c[0] for c in crlf] == ["CRLF 一", "CRLF 三", "CRLF 二", "CRLF 笔记一", "CRLF 笔记二"]
    assert kept > 10_000_000  # the refused line is kept whole, not truncated
    again = ingest_logs([str(corpus)])
    assert again.by_status == {"unchanged": 15}

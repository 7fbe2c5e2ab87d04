"""The JSON-lines stage of ingest: lines split outside DuckDB (Arrow), good lines stored in one pass, every
other line refused in a second pass with its reason — the same rows, numbers and reasons on every shape of
file, and the whole-file formats keep the hash of their content."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from chronicle.services.ingest import FileIngestor
from chronicle.settings import Settings


def line(content: str, ts: str = "2026-01-05T10:00:00+08:00", **extra: object) -> str:
    return json.dumps({"project_id": "P", "ts": ts, "content": content, **extra}, ensure_ascii=False)


def db(home: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        return conn.execute(sql).fetchall()


LINES = [
    line("first", site="a"),                        # 1 good, with metadata
    "",                                             # 2 blank: skipped, not a reject
    "{broken",                                      # 3 invalid_json
    '["an", "array"]',                              # 4 not_an_object
    line("no ts", ts=""),                           # 5 missing_timestamp
    line("bad zone", ts="2026-01-05 10:00 CST"),    # 6 invalid_timezone
    line("\x01 control char, a quote \" and 中文"),  # 7 good (\x01 broke the old CSV line splitter)
    line("   "),                                    # 8 missing_content
    line("last", ts="2026-01-05T02:00:00Z"),        # 9 good
]
EXPECTED_REJECTS = [(3, "invalid_json"), (4, "not_an_object"), (5, "missing_timestamp"), (6, "invalid_timezone"),
                    (8, "missing_content")]


@pytest.mark.parametrize("ending", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("final_newline", [True, False], ids=["terminated", "unterminated"])
def test_every_line_is_stored_or_refused_with_its_number(home: Path, tmp_path: Path, ending: str,
                                                         final_newline: bool) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes((ending.join(LINES) + (ending if final_newline else "")).encode())
    result = FileIngestor(Settings(), None).ingest(path, force=True)
    assert result.entries_added == 3
    assert dict(result.rejects) == {"invalid_json": 1, "not_an_object": 1, "missing_timestamp": 1,
                                    "invalid_timezone": 1, "missing_content": 1}
    stored = db(home, "SELECT line_no, content, metadata::VARCHAR, ts::VARCHAR FROM raw_logs ORDER BY line_no")
    assert [(n, c) for n, c, _, _ in stored] == [(1, "first"), (7, "\x01 control char, a quote \" and 中文"),
                                                 (9, "last")]
    assert json.loads(stored[0][2]) == {"site": "a"}
    assert stored[0][3] == "2026-01-05 02:00:00" and stored[2][3] == "2026-01-05 02:00:00"  # UTC
    assert db(home, "SELECT line_no, reason FROM rejects ORDER BY line_no") == EXPECTED_REJECTS
    raw = dict(db(home, "SELECT line_no, raw FROM rejects"))
    assert raw[3] == "{broken"  # kept verbatim, without its line ending
    assert "CST" in db(home, "SELECT detail FROM rejects WHERE line_no = 6")[0][0]


def test_ids_and_rows_do_not_change_between_a_fresh_read_and_an_append(home: Path, tmp_path: Path) -> None:
    """Appending to a file gives the rows (ids, numbers) a whole read of the final file gives (the copy read into
    a home of its own: in the same home it is the file already read, stored once)."""
    settings = Settings()
    other = tmp_path / "other-home"
    appended, whole = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    appended.write_text("\n".join(LINES[:4]) + "\n", encoding="utf-8")
    FileIngestor(settings, None).ingest(appended)
    with appended.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(LINES[4:]) + "\n")
    assert FileIngestor(settings, None).ingest(appended).status == "appended"
    whole.write_bytes(appended.read_bytes())
    FileIngestor(Settings(home=other), None).ingest(whole)

    def rows_of(where: Path, path: Path) -> list[tuple]:
        return db(where, f"SELECT line_no, type, content, ts, local_date, week_number FROM raw_logs "
                         f"WHERE source_file = '{path.resolve()}' ORDER BY line_no")

    assert rows_of(home, appended) == rows_of(other, whole) and len(rows_of(other, whole)) == 3
    rejects = "SELECT line_no, reason FROM rejects WHERE source_file = '{}' ORDER BY line_no"
    assert db(home, rejects.format(appended.resolve())) == db(other, rejects.format(whole.resolve()))
    # Reading it whole again changes nothing: the same ids, not added twice.
    ids = db(home, "SELECT entry_id FROM raw_logs ORDER BY entry_id")
    assert FileIngestor(settings, None).ingest(appended, force=True).entries_added == 0
    assert db(home, "SELECT entry_id FROM raw_logs ORDER BY entry_id") == ids
    assert db(home, "SELECT count(*), count(DISTINCT entry_id) FROM raw_logs") == [(3, 3)]


def test_whole_file_formats_store_the_hash_of_their_content(home: Path, tmp_path: Path) -> None:
    csv_file = tmp_path / "export.csv"
    csv_file.write_text("project_id,ts,content\nP,2026-01-05T10:00:00+08:00,hello\n", encoding="utf-8")
    utf16 = tmp_path / "wide.jsonl"
    utf16.write_bytes(("\ufeff" + line("wide") + "\n").encode("utf-16-le"))
    for path in (csv_file, utf16):
        assert FileIngestor(Settings(), None).ingest(path).entries_added == 1
        stored = db(home, f"SELECT prefix_sha256 FROM ingest_files WHERE path = '{path.resolve()}'")[0][0]
        assert stored == hashlib.sha256(path.read_bytes()).hexdigest()

"""Ingest flow against real DuckDB files: ground truth, incremental, idempotent, bad input, real corpora."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from chronicle.flows.ingest_logs import ingest_logs
from tests.conftest import DATA

CSV_MAP = {"study": "project_id", "time": "ts", "user": "actor", "event": "type", "text": "content"}


def rows(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql, params or []).fetchall()


def snapshot(db: Path) -> list[tuple]:
    return rows(db, "SELECT entry_id, project_id, ts, week_number, type, content, metadata::VARCHAR "
                    "FROM raw_logs ORDER BY entry_id")


@pytest.fixture()
def mapped(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:

    monkeypatch.setenv("CHRONICLE_COLUMN_MAP", json.dumps(CSV_MAP))
    return home


def test_sample_weeks_match_ground_truth(mapped: Path, sample_dir: Path) -> None:
    summary = ingest_logs([str(sample_dir / "logs")])
    assert summary.rejects == {}
    truth = json.loads((sample_dir / "ground_truth.json").read_text())
    db = mapped / "chronicle.duckdb"
    for project, data in truth["projects"].items():
        got = {
            (week, type_): n
            for week, type_, n in rows(db, "SELECT week_number, type, count(*) FROM raw_logs WHERE project_id = ? "
                                           "GROUP BY ALL", [project])
        }
        for week, counts in data["weeks"].items():
            for type_ in ("message", "enrollment", "ae", "sae", "deviation", "query", "decision"):
                assert got.get((int(week), type_), 0) == counts[type_], (project, week, type_)
        total = rows(db, "SELECT count(*) FROM raw_logs WHERE project_id = ?", [project])[0][0]
        assert total == data["total_entries"]


def test_reingest_is_idempotent_and_skips_unchanged(mapped: Path, sample_dir: Path) -> None:
    first = ingest_logs([str(sample_dir / "logs")])
    before = snapshot(mapped / "chronicle.duckdb")
    second = ingest_logs([str(sample_dir / "logs")])
    assert second.by_status == {"unchanged": first.files}
    assert second.entries_added == 0
    assert snapshot(mapped / "chronicle.duckdb") == before


def test_append_adds_only_new_lines(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "ops.jsonl"
    log.parent.mkdir()
    lines = [json.dumps({"project_id": "P", "ts": f"2026-01-0{i}T10:00:00+08:00", "type": "message",
                         "content": f"line {i}"}) for i in range(1, 4)]
    log.write_text("\n".join(lines) + "\n")
    ingest_logs([str(log)])
    ids_before = {r[0] for r in rows(home / "chronicle.duckdb", "SELECT entry_id FROM raw_logs")}
    with log.open("a") as fh:
        fh.write(json.dumps({"project_id": "P", "ts": "2026-01-05T10:00:00+08:00", "content": "late"}) + "\n")
    result = ingest_logs([str(log)])
    assert result.by_status == {"appended": 1} and result.entries_added == 1
    got = rows(home / "chronicle.duckdb", "SELECT entry_id, line_no, week_number FROM raw_logs ORDER BY line_no")
    assert {r[0] for r in got} > ids_before
    assert [r[1] for r in got] == [1, 2, 3, 4]
    assert got[-1][2] == 202602


def test_unterminated_tail_waits_for_the_writer(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"
    done = json.dumps({"project_id": "P", "ts": "2026-01-05T10:00:00Z", "content": "a"})
    log.write_text(done + "\n" + '{"project_id": "P", "ts": "2026-01-0')
    first = ingest_logs([str(log)])
    assert first.entries_added == 1 and first.rejects == {}
    with log.open("a") as fh:
        fh.write('5T11:00:00Z", "content": "b"}\n')
    second = ingest_logs([str(log)])
    assert second.entries_added == 1 and second.rejects == {}
    assert rows(home / "chronicle.duckdb", "SELECT count(*) FROM raw_logs")[0][0] == 2


def test_rewritten_file_is_replaced(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    make = lambda c: json.dumps({"project_id": "P", "ts": "2026-01-05T10:00:00Z", "content": c})  # noqa: E731
    log.write_text("\n".join(make(c) for c in "abc") + "\n")
    ingest_logs([str(log)])
    log.write_text("\n".join(make(c) for c in "axc") + "\n")
    os.utime(log, ns=(1, 1))  # a different mtime, as any editor would leave
    ingest_logs([str(log)])
    assert sorted(r[0] for r in rows(home / "chronicle.duckdb", "SELECT content FROM raw_logs")) == ["a", "c", "x"]


def test_bad_input_is_quarantined_with_reasons(home: Path, tmp_path: Path) -> None:
    d = tmp_path / "bad"
    (d / "memory").mkdir(parents=True)
    good = json.dumps({"project_id": "P", "ts": "2026-01-05T10:00:00+08:00", "type": "ae", "content": "AE 1 级"},
                      ensure_ascii=False)
    mixed = [
        good.encode(),
        b'{"project_id": "P", "ts": "2026-01-05T10:00:00Z", "content": "caf\xe9 latin-1"}',
        b"{broken json",
        b'{"project_id": "P", "content": "no ts"}',
        b'{"project_id": "P", "ts": "2026-02-30T10:00:00", "content": "impossible"}',
        b'{"project_id": "P", "ts": "2999-01-01T10:00:00Z", "content": "future"}',
        b'{"project_id": "P", "ts": "2026-01-05T10:00:00Z", "content": "' + b"x" * 2_000_100 + b'"}',
        b'["not", "an", "object"]',
        b'{"ts": "2026-01-05T10:00:00Z", "content": "no project"}',
        b'{"project_id": "P", "ts": "2026-01-05T10:00:00Z", "content": ""}',
    ]
    (d / "mixed.jsonl").write_bytes(b"\r\n".join(mixed) + b"\r\n")
    (d / "memory" / "2026-02-30.md").write_text("- a note on a day that does not exist\n")
    (d / "empty.jsonl").write_bytes(b"")
    (d / "blob.jsonl").write_bytes(b"\x00\x01\x02binary\x00" * 100)
    summary = ingest_logs([str(d)])
    db = home / "chronicle.duckdb"
    reasons = dict(rows(db, "SELECT reason, count(*) FROM rejects GROUP BY 1"))
    assert reasons == {
        "invalid_utf8": 1, "invalid_json": 1, "missing_timestamp": 1, "invalid_timestamp": 1,
        "future_timestamp": 1, "line_too_long": 1, "not_an_object": 1, "missing_project": 1,
        "missing_content": 1, "invalid_date": 1, "empty_file": 1, "binary_file": 1,
    }
    assert summary.rejects == reasons
    assert rows(db, "SELECT content FROM raw_logs") == [("AE 1 级",)]
    kept = dict(rows(db, "SELECT reason, raw FROM rejects WHERE reason IN ('invalid_utf8', 'invalid_json')"))
    assert kept["invalid_json"] == "{broken json"
    assert "\\xe9" in kept["invalid_utf8"]
    # Re-reading the same bad input records nothing twice.
    ingest_logs([str(d)])
    assert sum(dict(rows(db, "SELECT reason, count(*) FROM rejects GROUP BY 1")).values()) == 12


def test_real_corpora_ingest_without_rejects(home: Path, tmp_path: Path) -> None:
    notes = tmp_path / "openclaw"
    shutil.copytree(DATA / "openclaw", notes)
    summary = ingest_logs([str(notes), str(DATA / "locomo" / "locomo10.json")])
    assert summary.rejects == {}
    assert summary.skipped_files == 2  # MEMORY.md and the licence note are not logs
    db = home / "chronicle.duckdb"
    turns = sum(
        len(v) for conv in json.loads((DATA / "locomo" / "locomo10.json").read_text())
        for k, v in conv["conversation"].items() if k.startswith("session_") and isinstance(v, list)
    )
    assert rows(db, "SELECT count(*) FROM raw_logs WHERE source = 'locomo'")[0][0] == turns
    assert rows(db, "SELECT count(DISTINCT project_id) FROM raw_logs WHERE source = 'locomo'")[0][0] == 10
    first = rows(db, "SELECT ts, actor, metadata->>'dia_id' FROM raw_logs WHERE source = 'locomo' ORDER BY line_no "
                     "LIMIT 1")[0]
    assert (str(first[0]), first[1], first[2]) == ("2023-05-08 05:56:00", "Caroline", "D1:1")  # 13:56 Shanghai
    note_days = rows(db, "SELECT DISTINCT local_date::VARCHAR FROM raw_logs WHERE source = 'note' ORDER BY 1")
    assert [d[0] for d in note_days] == ["2026-02-14", "2026-02-15", "2026-02-24"]
    heading = rows(db, "SELECT metadata->'heading_path' FROM raw_logs WHERE content LIKE 'Fixed WebSocket handler%'")
    assert json.loads(heading[0][0]) == ["Session Log - 2026-02-14", "Agent ROS Bridge - Major Development Session",
                                         "Completed Features (Full Production Stack)"]


def test_cli_ingest_and_weeks(home: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chronicle.cli.main import app

    runner = CliRunner()
    only_bad = tmp_path / "only_bad"
    only_bad.mkdir()
    (only_bad / "a.jsonl").write_bytes(b"")
    result = runner.invoke(app, ["ingest", str(only_bad)])
    assert result.exit_code == 1 and "nothing could be read" in result.output
    log = tmp_path / "ok.jsonl"
    log.write_text(json.dumps({"project_id": "P", "ts": "2026-01-04T16:30:00Z", "content": "x"}) + "\n")
    result = runner.invoke(app, ["ingest", str(log)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["weeks", "--project", "P", "--csv"])
    assert result.output.splitlines()[1].startswith("P,202602,2026-01-05,1,1,")
    result = runner.invoke(app, ["config", "--json"])
    assert json.loads(result.output)["db_path"] == str(home.resolve() / "chronicle.duckdb")


def test_duckdb_shell_reads_the_database(mapped: Path, sample_dir: Path) -> None:
    """The README's query, through the real `duckdb` shell installed with the package (duckdb-cli)."""
    import subprocess
    import sys

    ingest_logs([str(sample_dir / "logs")])
    shell = Path(sys.executable).parent / "duckdb"
    out = subprocess.run([str(shell), "-readonly", "-csv", str(mapped / "chronicle.duckdb"), "-c",
                          "select week_number, count(*) from raw_logs group by 1 order by 1"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    truth = json.loads((sample_dir / "ground_truth.json").read_text())["projects"]
    expected: dict[int, int] = {}
    for data in truth.values():
        for week, counts in data["weeks"].items():
            if counts["entries"]:
                expected[int(week)] = expected.get(int(week), 0) + counts["entries"]
    assert out[0].startswith("week_number")
    assert {int(a): int(b) for a, b in (line.split(",") for line in out[1:])} == expected

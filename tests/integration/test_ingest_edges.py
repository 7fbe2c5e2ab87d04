"""Nothing lost at the edges of a file: a settled unterminated tail, NUL bytes, same-size rewrites
with a restored mtime, and timestamps with named zones or impossible offsets."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from chronicle.flows import ingest_logs as ingest_flow


def ingest_logs(paths: list[str]) -> dict:
    """The ingest flow's summary as a dict."""
    return asdict(ingest_flow.ingest_logs(paths))


def rows(home: Path, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        return conn.execute(sql, params or []).fetchall()


def line(content: str, ts: str = "2026-01-05T10:00:00+08:00", **extra: str) -> str:
    return json.dumps({"project_id": "P", "ts": ts, "content": content, **extra}, ensure_ascii=False)


def settle_after(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    monkeypatch.setenv("CHRONICLE_INGEST_SETTLE_S", str(seconds))


# --- (a) an unterminated, invalid last line is judged once the file has settled ------------------------
@pytest.mark.parametrize("tail", ['{"project_id": "P", "ts": "2026-01-0', '{"content": "' + "x" * 5_000_000],
                         ids=["short", "5MB"])
def test_a_settled_invalid_tail_is_judged_even_though_the_file_looks_unchanged(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: str
) -> None:
    log = tmp_path / "live.jsonl"
    log.write_text(line("a") + "\n" + tail)
    settle_after(monkeypatch, 3600)  # the writer may still be mid-line: the tail waits
    first = ingest_logs([str(log)])
    assert first["entries_added"] == 1 and first["rejects"] == {}

    settle_after(monkeypatch, 0)  # time passed, nobody wrote: same size, same mtime
    second = ingest_logs([str(log)])
    assert second["by_status"] != {"unchanged": 1}
    assert sum(second["rejects"].values()) == 1
    [(raw_len,)] = rows(home, "SELECT length(raw) FROM rejects")
    assert raw_len == len(tail)  # every refused byte kept

    third = ingest_logs([str(log)])  # judged once: nothing recorded twice
    assert third["by_status"] == {"unchanged": 1}
    assert rows(home, "SELECT count(*) FROM rejects") == [(1,)]
    assert rows(home, "SELECT count(*) FROM raw_logs") == [(1,)]


# --- (b) a NUL byte refuses its line, not the file ------------------------------------------------------
@pytest.mark.parametrize("bad_at", [3, 150], ids=["in-first-8KiB", "after-8KiB"])
def test_a_nul_byte_refuses_only_its_line(home: Path, tmp_path: Path, bad_at: int) -> None:
    lines = [line(f"entry {i}").encode() for i in range(1, 201)]
    lines[bad_at - 1] = line(f"entry {bad_at}").encode().replace(b"entry", b"en\x00try")
    log = tmp_path / "nul.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    summary = ingest_logs([str(log)])
    assert summary["entries_added"] == 199
    assert summary["rejects"] == {"binary_line": 1}
    [(line_no, raw)] = rows(home, "SELECT line_no, raw FROM rejects")
    assert line_no == bad_at and f"entry {bad_at}" in raw.replace("\\x00", "") and "\\x00" in raw
    assert rows(home, "SELECT count(*) FROM raw_logs WHERE content = ?", [f"entry {bad_at}"]) == [(0,)]
    assert rows(home, "SELECT max(line_no) FROM raw_logs") == [(200,)]  # later lines keep their numbers


def test_a_binary_file_is_refused_whole_with_every_byte_kept(home: Path, tmp_path: Path) -> None:
    blob = bytes(range(256)) * 40  # 10 KiB, NULs on every line
    (tmp_path / "blob.jsonl").write_bytes(blob)
    summary = ingest_logs([str(tmp_path / "blob.jsonl")])
    assert summary["rejects"] == {"binary_file": 1}
    [(raw,)] = rows(home, "SELECT raw FROM rejects")
    assert raw.encode("utf-8", "surrogatepass").count(b"\\x") >= 128 * 40 and len(raw) > len(blob)


def test_a_note_with_a_nul_line_keeps_its_other_entries(home: Path, tmp_path: Path) -> None:
    note = tmp_path / "memory" / "2026-01-05.md"
    note.parent.mkdir()
    note.write_bytes(b"# Day\n\n- first point\n- bro\x00ken point\n- third point\n")
    summary = ingest_logs([str(note.parent)])
    assert summary["rejects"] == {"binary_line": 1}
    assert sorted(r[0] for r in rows(home, "SELECT content FROM raw_logs")) == ["first point", "third point"]


# --- (c) a same-size rewrite with a restored mtime is seen; --force re-reads anything -------------------
def test_same_size_rewrite_with_restored_mtime_is_detected(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    log.write_text("\n".join(line(c) for c in "abc") + "\n")
    stat = log.stat()
    ingest_logs([str(log)])
    log.write_text("\n".join(line(c) for c in "axc") + "\n")
    os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # `touch -r`, `rsync -t`, `cp -p` do this
    assert log.stat().st_size == stat.st_size and log.stat().st_mtime_ns == stat.st_mtime_ns
    summary = ingest_logs([str(log)])
    assert summary["by_status"] != {"unchanged": 1}
    assert sorted(r[0] for r in rows(home, "SELECT content FROM raw_logs")) == ["a", "c", "x"]


def test_same_size_note_rewrite_is_detected(home: Path, tmp_path: Path) -> None:
    note = tmp_path / "memory" / "2026-01-05.md"
    note.parent.mkdir()
    note.write_text("- alpha point\n- gamma point\n")
    stat = note.stat()
    ingest_logs([str(note)])
    note.write_text("- alpha point\n- delta point\n")
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    ingest_logs([str(note)])
    assert sorted(r[0] for r in rows(home, "SELECT content FROM raw_logs")) == ["alpha point", "delta point"]


def test_force_rereads_a_big_file_changed_in_the_middle(home: Path, tmp_path: Path) -> None:
    """Big files are fingerprinted by head and tail (a full hash of every file on every run would cost a full
    read): a change in the middle with size and mtime restored needs `--force`, which the CLI offers."""
    from typer.testing import CliRunner

    from chronicle.cli.main import app

    log = tmp_path / "big.jsonl"
    n = 120_000  # ~9 MB: above the full-hash size
    log.write_text("\n".join(line(f"row {i:07d}") for i in range(n)) + "\n")
    stat = log.stat()
    ingest_logs([str(log)])
    text = log.read_text().replace("row 0060000", "row X060000")
    log.write_text(text)
    os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    runner = CliRunner()
    plain = runner.invoke(app, ["ingest", str(log)])
    assert plain.exit_code == 0 and "unchanged" in plain.output
    assert rows(home, "SELECT count(*) FROM raw_logs WHERE content = 'row X060000'") == [(0,)]
    forced = runner.invoke(app, ["ingest", "--force", str(log)])
    assert forced.exit_code == 0, forced.output
    assert rows(home, "SELECT count(*) FROM raw_logs WHERE content = 'row X060000'") == [(1,)]
    assert rows(home, "SELECT count(*), count(DISTINCT entry_id) FROM raw_logs") == [(n, n)]
    again = runner.invoke(app, ["ingest", "--force", str(log)])  # forcing twice changes nothing
    assert again.exit_code == 0 and rows(home, "SELECT count(*) FROM raw_logs") == [(n,)]


# --- (d) named zones are honoured, impossible offsets refused with a reason ----------------------------
ZONED = {
    "2026-11-22 20:00:00 UTC": "2026-11-22 20:00:00",
    "2026-11-22T20:00:00 GMT": "2026-11-22 20:00:00",
    "2026-11-22 20:00:00 PST": "2026-11-23 04:00:00",
    "2026-07-22 20:00:00 PDT": "2026-07-23 03:00:00",
    "2026-11-22 20:00:00 EST": "2026-11-23 01:00:00",
    "2026-11-22 20:00:00 Europe/Berlin": "2026-11-22 19:00:00",
    "2026-07-22 20:00:00 Europe/Berlin": "2026-07-22 18:00:00",
    "2026-11-22T20:00:00 America/Los_Angeles": "2026-11-23 04:00:00",
    "2026-11-22T20:00:00.250+14:00": "2026-11-22 06:00:00.250000",
    "2026-11-22T20:00:00-0930": "2026-11-23 05:30:00",
    "2026-11-22 20:00:00": "2026-11-22 12:00:00",  # naive: the project's local time (Asia/Shanghai)
    "2026-11-22": "2026-11-21 16:00:00",  # a date: local midnight, not UTC midnight
}
REFUSED = {
    "2026-11-22T20:00:00+25:00": "offset",
    "2026-11-22T20:00:00-14:60": "offset",
    "2026-11-22 20:00:00 CST": "ambiguous",
    "2026-11-22 20:00:00 IST": "ambiguous",
    "2026-11-22 20:00:00 Mars/Olympus": "unknown",
    "2026-11-22 20:00:00 XYZT": "unknown",
}


def test_named_zones_are_read_and_bad_offsets_refused_with_a_reason(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "zones.jsonl"
    stamps = [*ZONED, *REFUSED]
    log.write_text("\n".join(line(ts, ts=ts) for ts in stamps) + "\n")
    summary = ingest_logs([str(log)])
    got = {content: str(ts) for content, ts in rows(home, "SELECT content, ts FROM raw_logs")}
    assert got == ZONED
    assert summary["rejects"] == {"invalid_timezone": len(REFUSED)}
    details = dict(rows(home, "SELECT json_extract_string(raw, '$.ts'), detail FROM rejects"))
    for ts, word in REFUSED.items():
        assert word in details[ts], (ts, details[ts])


def test_zones_in_csv_exports_too(home: Path, tmp_path: Path) -> None:
    csv = tmp_path / "x.csv"
    csv.write_text("project_id,ts,content\nP,2026-11-22 20:00:00 UTC,utc\nP,2026-11-22T20:00:00+25:00,bad\n")
    summary = ingest_logs([str(csv)])
    assert summary["rejects"] == {"invalid_timezone": 1}
    assert [(c, str(t)) for c, t in rows(home, "SELECT content, ts FROM raw_logs")] == [
        ("utc", str(datetime(2026, 11, 22, 20)))]


# --- (e) a plan another worker made stale while its write window was awaited ----------------------------------
@pytest.mark.parametrize("then", ["appended", "as-is"])
def test_a_plan_made_stale_by_another_writer_is_made_again_not_written_twice(
        home: Path, tmp_path: Path, then: str) -> None:
    """Two workers ingest one folder at once: both plan before either writes, the second waits for the first's
    write window. Written as planned, its plan would store every line twice; it is planned again on what the
    first one stored (here the two plans are made, then written one after the other, in one process)."""
    from chronicle.services.ingest import FileIngestor
    from chronicle.services.ingest_write import write_batch
    from chronicle.settings import Settings

    log = tmp_path / "app.jsonl"
    log.write_text("".join(line(f"entry {i}", ts=f"2026-01-05T1{i}:00:00+08:00") + "\n" for i in range(3)))
    first, second = FileIngestor(Settings()), FileIngestor(Settings())
    key = str(log.resolve())
    plan_a, _ = first._plan_round([key], False, False)
    plan_b, _ = second._plan_round([key], False, False)
    assert write_batch(first.settings, first._redact, plan_a, None)[key].entries_added == 3
    if then == "appended":
        with log.open("a") as fh:
            fh.write(line("entry 3", ts="2026-01-05T13:30:00+08:00") + "\n")
    assert key not in write_batch(second.settings, second._redact, plan_b, None)  # stale: nothing written
    assert rows(home, "SELECT count(*) FROM raw_logs") == [(3,)]
    [result] = second.ingest_many([log])  # planned again: reads on from where the first writer stopped
    expected = {"appended": ("appended", 1, 4), "as-is": ("unchanged", 0, 3)}[then]
    assert (result.status, result.entries_added, rows(home, "SELECT count(*) FROM raw_logs")[0][0]) == expected


def test_copies_of_one_content_are_rounds_that_make_progress_not_a_stall(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Copies of a content already known are written a round each (each reads on from the one before): however
    many copies, those rounds write something; only rounds in which every plan went stale count to the bound."""
    from chronicle.services import ingest as ingest_service
    from chronicle.services.ingest import FileIngestor
    from chronicle.settings import Settings

    monkeypatch.setattr(ingest_service, "_MAX_STALE_ROUNDS", 1)
    text = "".join(line(f"entry {i}", ts=f"2026-01-05T1{i}:00:00+08:00") + "\n" for i in range(3))
    copies = [tmp_path / f"copy-{n}.jsonl" for n in range(4)]
    for path in copies:
        path.write_text(text)
    ingestor = FileIngestor(Settings())
    assert ingestor.ingest(copies[0]).status == "ingested"
    assert [r.status for r in ingestor.ingest_many(copies[1:])] == ["known", "known", "known"]
    assert rows(home, "SELECT count(*) FROM raw_logs") == [(3,)]


# --- (e) a refused line that names a safety event is never just a count of rejects --------------------------------
def test_a_refused_line_naming_a_safety_event_is_said_by_the_run_and_the_command(home: Path, tmp_path: Path) -> None:
    """An SAE on a line the ingest must refuse (an impossible date, broken JSON, a time it cannot read) is in no week's
    stats or report: the run's message, its artifact and the command name the line, in red, rather than count it
    among the rejects. Refused lines without one (a hex id holding `ae`) are not named; lines refused in an
    earlier run are not named again."""
    from typer.testing import CliRunner

    from chronicle.cli.main import app

    log = tmp_path / "site.jsonl"
    log.write_text("\n".join([
        line("enrolled XH-01"),
        line("XH-02 hospitalised with pneumonia", ts="2026-02-30T10:00:00+08:00", type="sae"),  # impossible date
        '{"project_id": "P", "ts": "2026-01-06T09:00:00+08:00", "content": "受试者 XH-03 发生严重不良事件',  # broken
        '{"project_id": "P", "ts": "2026-01-07", "content": "checksum 3f2ae19c", ',  # broken, no safety event
        line("AE grade 2 rash", ts="not a time", type="ae"),
    ]) + "\n")
    out = CliRunner().invoke(app, ["ingest", str(log)])
    assert out.exit_code == 0, out.output
    named = [f"site.jsonl:{n}" for n in (2, 3, 5)]
    assert "3 refused line(s) name a safety event" in out.output and all(n in out.output for n in named), out.output
    assert "site.jsonl:4" not in out.output
    # Decided once, as the lines were stored (the SQL ingest path): readers read the flag.
    assert rows(home, "SELECT line_no, safety FROM rejects ORDER BY line_no") == [(2, True), (3, True), (4, False),
                                                                                (5, True)]
    [(message,)] = rows(home, "SELECT message FROM pipeline_runs WHERE flow_name = 'ingest-logs'")
    assert "3 refused line(s) name a safety event (SAE/AE)" in message, message
    [(counted,)] = rows(home, "SELECT counts->>'safety_rejects' FROM pipeline_runs WHERE flow_name = 'ingest-logs'")
    assert counted == "3"

    log.write_text(log.read_text() + line("a later line") + "\n")  # appended: the old refusals are not new
    again = CliRunner().invoke(app, ["ingest", str(log)])
    assert again.exit_code == 0 and "safety event" not in again.output, again.output
    # They are still unfixed: `chronicle status`, what a monitor calls, counts them as a problem until they are.
    status = CliRunner().invoke(app, ["status"])
    assert status.exit_code == 1 and "3 refused log line(s) name a safety event" in status.output, status.output
    assert "site.jsonl:2" in status.output and "site.jsonl:4" not in status.output
    shown = json.loads(CliRunner().invoke(app, ["status", "--format", "json"]).stdout)
    assert sorted(r["line"] for r in shown if r["kind"] == "refused safety line") == [2, 3, 5]

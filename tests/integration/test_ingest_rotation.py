"""Real log folders: rotation by rename, copytruncate, compressed rotation, copies, truncation and rewrites.

Each case ends with what an undisturbed run over the same entries stores: nothing lost, nothing doubled."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import duckdb

from chronicle.ingest.detect import discover
from chronicle.services.ingest import FileIngestor
from chronicle.settings import Settings


def event(i: int, week_day: str = "2026-03-02", kind: str = "enrollment", **extra: object) -> str:
    return json.dumps({"project_id": "TRIAL", "ts": f"{week_day}T{8 + i % 10:02d}:{i % 60:02d}:00+08:00",
                       "actor": "CRC-1", "type": kind, "content": f"受试者 S-{i:03d} 入组", **extra},
                      ensure_ascii=False) + "\n"


W10 = "".join(event(i) for i in range(1, 6))  # five enrolments in 2026-W10
W11 = "".join(event(i, "2026-03-09") for i in range(6, 8))  # two in W11


def ingest(folder: Path, home: Path, **kw: bool) -> list:
    files, _ = discover([folder])
    return FileIngestor(Settings(home=home)).ingest_many(files, **kw)


def entries(home: Path) -> list[tuple]:
    """What the stats are made of: every stored entry (not its file), as a sorted multiset."""
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        return conn.execute("SELECT project_id, ts, actor, type, content, week_number FROM raw_logs "
                            "ORDER BY ALL").fetchall()


def enrolled(home: Path) -> dict[int, int]:
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        return dict(conn.execute("SELECT week_number, count(*) FROM raw_logs WHERE type = 'enrollment' "
                                 "GROUP BY 1 ORDER BY 1").fetchall())


def undisturbed(tmp_path: Path, *texts: str) -> list[tuple]:
    """The entries of one run over the same events written once, in one file, never rotated."""
    folder, home = tmp_path / "undisturbed", tmp_path / "undisturbed-home"
    folder.mkdir()
    (folder / "app.jsonl").write_text("".join(texts), encoding="utf-8")
    ingest(folder, home)
    return entries(home)


def test_copytruncate_keeps_the_week_already_ingested(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    logs.mkdir()
    app = logs / "app.jsonl"
    app.write_text(W10, encoding="utf-8")
    ingest(logs, home)
    shutil.copy2(app, logs / "app.jsonl.1")  # logrotate copytruncate: copy, then truncate in place
    with app.open("r+") as fh:
        fh.truncate(0)
    with app.open("a", encoding="utf-8") as fh:
        fh.write(W11)
    results = {Path(r.path).name: r for r in ingest(logs, home)}
    assert results["app.jsonl.1"].status == "known" and results["app.jsonl.1"].same_as == str(app)
    assert results["app.jsonl"].entries_added == 2 and results["app.jsonl"].entries_removed == 0
    assert enrolled(home) == {202610: 5, 202611: 2}
    assert entries(home) == undisturbed(tmp_path, W10, W11)
    # The rotated copy deleted later, the live file grown: still nothing lost or doubled.
    (logs / "app.jsonl.1").unlink()
    with app.open("a", encoding="utf-8") as fh:
        fh.write(event(8, "2026-03-10"))
    ingest(logs, home)
    assert enrolled(home) == {202610: 5, 202611: 3}


def test_rotation_by_rename_reads_on_from_the_offset(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    logs.mkdir()
    app = logs / "app.jsonl"
    app.write_text(W10, encoding="utf-8")
    ingest(logs, home)
    with app.open("a", encoding="utf-8") as fh:  # written after the last ingest, before the rotation
        fh.write(event(9, "2026-03-06"))
    app.rename(logs / "app.jsonl.1")  # logrotate `create`: rename, then a new file under the old name
    app.write_text(W11, encoding="utf-8")
    results = {Path(r.path).name: r for r in ingest(logs, home)}
    assert results["app.jsonl.1"].status == "known" and results["app.jsonl.1"].entries_added == 1
    assert results["app.jsonl"].entries_added == 2
    assert entries(home) == undisturbed(tmp_path, W10, event(9, "2026-03-06"), W11)
    assert {r.status for r in ingest(logs, home)} == {"unchanged"}


def test_compressed_rotation_is_the_file_already_read(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    logs.mkdir()
    app = logs / "app.jsonl"
    app.write_text(W10, encoding="utf-8")
    ingest(logs, home)
    with gzip.open(logs / "app.jsonl.1.gz", "wb") as fh:  # rotated and compressed (delaycompress off)
        fh.write(app.read_bytes())
    app.write_text(W11, encoding="utf-8")
    results = {Path(r.path).name: r for r in ingest(logs, home)}
    assert results["app.jsonl.1.gz"].status == "known" and results["app.jsonl.1.gz"].entries_added == 0
    assert entries(home) == undisturbed(tmp_path, W10, W11)


def test_a_copy_under_another_name_is_not_counted_twice(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    (logs / "backup").mkdir(parents=True)
    (logs / "export.jsonl").write_text(W10, encoding="utf-8")
    (logs / "backup" / "export-copy.jsonl").write_text(W10, encoding="utf-8")  # both there from the start
    results = ingest(logs, home)
    assert enrolled(home) == {202610: 5}
    assert sum(r.entries_added for r in results) == 5
    copy = next(r for r in results if r.path.endswith("export.jsonl"))  # read second (sorted after backup/)
    assert copy.duplicates == {str(logs / "backup" / "export-copy.jsonl"): 5} or copy.status == "known"
    # A copy made after the original was read is the file already known.
    shutil.copy(logs / "export.jsonl", logs / "export (1).jsonl")
    again = {Path(r.path).name: r for r in ingest(logs, home)}
    assert again["export (1).jsonl"].status == "known" and again["export (1).jsonl"].entries_added == 0
    assert entries(home) == undisturbed(tmp_path, W10)


def test_the_same_entries_in_another_format_are_stored_once_but_repeats_in_one_file_stay(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    logs.mkdir()
    (logs / "a.jsonl").write_text(W10 + event(1), encoding="utf-8")  # S-001 logged twice: two real events
    rows = ["project_id,ts,actor,type,content"] + [
        ",".join([e["project_id"], e["ts"], e["actor"], e["type"], e["content"]])
        for e in (json.loads(line) for line in W10.splitlines()[:3])]
    (logs / "b.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")  # an export of three of them
    results = {Path(r.path).name: r for r in ingest(logs, home)}
    assert enrolled(home) == {202610: 6}
    assert results["b.csv"].duplicates == {str(logs / "a.jsonl"): 3} and results["b.csv"].entries_added == 0


def test_a_truncated_file_is_new_data_and_the_old_rows_stay(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    logs.mkdir()
    app = logs / "app.jsonl"
    app.write_text(W10, encoding="utf-8")
    ingest(logs, home)
    app.write_text(W11, encoding="utf-8")  # truncated by its writer and written again from the start
    (result,) = ingest(logs, home)
    assert result.status == "ingested" and result.entries_added == 2 and result.entries_removed == 0
    assert entries(home) == undisturbed(tmp_path, W10, W11)


def test_a_rewrite_supersedes_what_it_no_longer_holds_and_replace_is_explicit(tmp_path: Path) -> None:
    logs, home = tmp_path / "logs", tmp_path / "home"
    logs.mkdir()
    app = logs / "export.jsonl"
    app.write_text(W10, encoding="utf-8")
    ingest(logs, home)
    corrected = W10.replace("S-003 入组", "S-003 入组 (corrected)")  # the export regenerated with a fix
    app.write_text(corrected, encoding="utf-8")
    os.utime(app, ns=(1, 1))
    (result,) = FileIngestor(Settings(home=home), run_id="run-42").ingest_many([app])
    assert (result.entries_added, result.entries_removed, result.superseded_weeks) == (1, 1, [202610])
    assert entries(home) == undisturbed(tmp_path, corrected)
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        kept = conn.execute("SELECT content, superseded_by, reason, superseded_at IS NOT NULL "
                            "FROM raw_logs_superseded").fetchall()
    assert kept == [("受试者 S-003 入组", "run-42", "rewritten", True)]
    # Wholly different content is not a rewrite (it may be a rotation): nothing goes without --replace.
    app.write_text(W11, encoding="utf-8")
    assert ingest(logs, home)[0].entries_removed == 0 and enrolled(home) == {202610: 5, 202611: 2}
    (replaced,) = ingest(logs, home, replace=True)
    # Rows the file still holds stay as they were; the others are superseded, and their weeks named.
    assert (replaced.entries_removed, replaced.entries_added, replaced.superseded_weeks) == (5, 0, [202610])
    assert enrolled(home) == {202611: 2}

"""Input rules, pure: notes obey the same plausibility rule as log lines; compressed logs are recognised."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from chronicle.ingest.detect import detect_format, discover, gzipped
from chronicle.ingest.structured import note_entries, plausibility

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_a_note_named_far_in_the_future_is_refused_whole() -> None:
    entries, rejects = note_entries(Path("memory/9999-01-01.md"), "- a typo\n", "assistant",
                                    ZoneInfo("Asia/Shanghai"), 1000, now=NOW)
    assert entries == [] and [r.reason for r in rejects] == ["future_timestamp"]
    assert "9999-01-01.md" in rejects[0].detail


def test_plausibility_is_the_rule_of_log_lines() -> None:
    assert plausibility(datetime(2026, 12, 4, 11, 0), NOW) is None  # within 2 days ahead (naive = UTC)
    assert plausibility(datetime(2026, 12, 5, 0, 0), NOW)[0] == "future_timestamp"
    assert plausibility(datetime(1969, 12, 31), NOW)[0] == "implausible_timestamp"
    _, rejects = note_entries(Path("memory/1960-01-01.md"), "- old\n", "a", ZoneInfo("UTC"), 1000, now=NOW)
    assert [r.reason for r in rejects] == ["implausible_timestamp"]


def test_compressed_logs_are_found_in_folders(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(b'{"project_id": "P"}\n'))
    (tmp_path / "b.csv.gz").write_bytes(gzip.compress(b"project_id,ts,content\n"))
    (tmp_path / "c.tar.gz").write_bytes(gzip.compress(b"not a log"))
    found, skipped = discover([tmp_path])
    assert [p.name for p in found] == ["a.jsonl.gz", "b.csv.gz"] and [p.name for p in skipped] == ["c.tar.gz"]
    assert gzipped(Path("x.NDJSON.GZ")) and not gzipped(Path("x.gz"))
    assert detect_format(tmp_path / "a.jsonl.gz") == "jsonl" and detect_format(tmp_path / "b.csv.gz") == "csv"

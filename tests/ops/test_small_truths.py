"""A folder's ground-truth JSON is not read as 2,851 broken log lines."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from chronicle.cli.main import app
from chronicle.ingest.detect import detect_format
from tests.deployments.conftest import query, write_jsonl


def test_a_json_document_in_a_folder_is_skipped_with_a_notice(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "sample"
    write_jsonl(folder / "logs" / "a.jsonl", "ALPHA", 20, "a")
    truth = {"XH201": {str(202600 + w): {"entries": w, "ae": 0} for w in range(1, 40)}}
    (folder / "ground_truth.json").write_text(json.dumps(truth, indent=2), encoding="utf-8")
    (folder / "export.json").write_text("\n".join(json.dumps({"project_id": "BETA", "ts": "2026-01-05T10:00:00Z",
                                                              "content": f"line {i}"}) for i in range(3)) + "\n")
    assert detect_format(folder / "ground_truth.json") == "unsupported"
    assert detect_format(folder / "export.json") == "jsonl"  # JSON lines named .json are still logs

    result = CliRunner().invoke(app, ["ingest", str(folder)])
    assert result.exit_code == 0, result.output
    assert "skipped non-log files: 1" in result.output, result.output
    assert "ground_truth.json" in result.output, result.output  # the notice names it
    db = home / "chronicle.duckdb"
    assert query(db, "SELECT count(*) FROM rejects") == [(0,)]
    assert query(db, "SELECT project_id, count(*) FROM raw_logs GROUP BY 1 ORDER BY 1") == [("ALPHA", 20), ("BETA", 3)]


def test_a_file_of_only_broken_lines_is_nothing_read(home: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "b.jsonl").write_text('{"project_id": "P", "ts": \n{{{\nnot json\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["ingest", str(broken)])
    assert result.exit_code == 1 and "nothing could be read" in result.output, result.output
    good = tmp_path / "good"
    write_jsonl(good / "g.jsonl", "P", 2, "g")
    result = CliRunner().invoke(app, ["ingest", str(broken), str(good)])
    assert result.exit_code == 0, result.output  # one entry read: the broken lines are counted, not fatal
    result = CliRunner().invoke(app, ["ingest", str(broken)])
    assert result.exit_code == 0, result.output  # unchanged since it was read: nothing new, nothing wrong

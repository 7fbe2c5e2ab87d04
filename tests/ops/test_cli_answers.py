"""The CLI's answers: typos end with one line and a non-zero status; every listing speaks table, CSV
and JSON through one helper, and a table written to a pipe is never cut."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronicle.cli.main import app
from tests.deployments.conftest import write_jsonl

runner = CliRunner()


@pytest.fixture()
def ingested(home: Path, tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "logs" / "a.jsonl", "ALPHA", 40, "a")
    result = runner.invoke(app, ["ingest", str(tmp_path / "logs")])
    assert result.exit_code == 0, result.output
    return tmp_path


@pytest.mark.parametrize(("args", "says"), [
    (["backfill", "--project", "XH999"], "unknown project 'XH999'; known projects: ALPHA"),
    (["backfill", "--all", "--from", "2025-W30", "--to", "2025-W20"], "--from 2025-W30 is after --to 2025-W20"),
    (["backfill", "--all", "--from", "2025-W53"], "--from '2025-W53' does not exist: 2025 has ISO weeks W01 to W52"),
    (["backfill", "--all", "--to", "2026-W60"], "--to '2026-W60' does not exist"),
    (["weekly", "--week", "2026-13"], "--week '2026-13' is not an ISO week: write YYYY-Www, e.g. 2026-W05"),
    (["distill", "--until", "2026-02-30"], "--until '2026-02-30' is not a day: write YYYY-MM-DD"),
    (["ingest", "/no/such/folder"], "no such file or folder: /no/such/folder"),
])
def test_typos_end_with_one_line_and_status_2(ingested: Path, args: list[str], says: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [result.output.strip()], result.output  # one line
    assert says in result.output and "Traceback" not in result.output, result.output


def test_valid_range_with_nothing_to_do_says_why(ingested: Path) -> None:
    first = runner.invoke(app, ["backfill", "--project", "ALPHA", "--from", "2026-W01", "--to", "2026-W02"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, ["runs", "--format", "json", "--limit", "1"])
    runner.invoke(app, ["backfill", "--project", "ALPHA", "--from", "2026-W01", "--to", "2026-W02"])
    latest = json.loads(runner.invoke(app, ["runs", "--format", "json", "--limit", "1"]).output)[0]
    assert json.loads(again.output)[0]["generated"] == 2
    assert latest["message"].startswith("nothing to do: all 2 week(s) of ALPHA 2026-W01..2026-W02 already have "
                                        "current reports (cached 2)"), latest


def test_every_listing_speaks_table_csv_and_json(ingested: Path) -> None:
    assert runner.invoke(app, ["backfill", "--project", "ALPHA"]).exit_code == 0
    listings = [["weeks"], ["stats", "--project", "ALPHA"], ["runs"], ["memory", "tags"], ["memory", "list"],
                ["memory", "search", "line"], ["report", "history", "--project", "ALPHA", "--week", "2026-W01"]]
    for args in listings:
        as_json = runner.invoke(app, [*args, "--format", "json"])
        assert as_json.exit_code == 0, (args, as_json.output)
        rows = json.loads(as_json.output)
        as_csv = runner.invoke(app, [*args, "--format", "csv"])
        assert as_csv.exit_code == 0, (args, as_csv.output)
        table = list(csv.reader(io.StringIO(as_csv.output)))
        assert len(table) == len(rows) + 1, (args, as_csv.output)  # a header, then one line per row
        if rows:
            assert table[0] == list(rows[0]), args
        assert runner.invoke(app, [*args, "--format", "table"]).exit_code == 0, args
    assert runner.invoke(app, ["weeks", "--format", "yaml"]).exit_code == 2
    history = json.loads(runner.invoke(app, ["report", "history", "--project", "ALPHA", "--week", "2026-W01",
                                             "--format", "json"]).output)
    assert history[0]["version"] == 1 and history[0]["summary"], history  # the text of the version is there


def test_a_table_on_a_pipe_is_printed_whole(ingested: Path, tmp_path: Path) -> None:
    runner.invoke(app, ["backfill", "--project", "XH999"])  # not a run: refused before it starts
    long_path = tmp_path / ("a-rather-long-folder-name-" * 4)
    write_jsonl(long_path / "b.jsonl", "BETA-WITH-A-LONG-PROJECT-NAME", 5, "b")
    assert runner.invoke(app, ["ingest", str(long_path)]).exit_code == 0
    out = runner.invoke(app, ["runs"]).output
    line = next(x for x in out.splitlines() if "+5 entries" in x)
    assert "files 1 {'ingested': 1}, +5 entries, 0 rejects" in line and "…" not in out, out

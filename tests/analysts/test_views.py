"""Analyst views against the sample trial's ground truth; the documented SQL runs; charts and exports."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import duckdb
from typer.testing import CliRunner

from chronicle.cli.main import app
from tests.lake.helpers import WAIT_FOR_GO, child_env, finish, start_together

DOC = Path(__file__).resolve().parents[2] / "docs" / "analysts.md"
KEYS = {"enrolled": "enrolled", "enrolled_total": "enrolled_total", "ae": "ae", "sae": "sae",
        "deviations": "deviation", "queries": "query", "decisions": "decision", "messages": "message",
        "entries": "entries"}


def _query(db: Path, sql: str, params: list | None = None) -> list[dict]:
    with duckdb.connect(str(db), read_only=True) as conn:
        cur = conn.execute(sql, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def test_weekly_stats_equal_ground_truth(trial: Path, sample_dir: Path) -> None:
    truth = json.loads((sample_dir / "ground_truth.json").read_text())
    for project, data in truth["projects"].items():
        rows = {r["week_number"]: r for r in _query(trial, "SELECT * FROM weekly_stats WHERE project_id = ?",
                                                     [project])}
        assert sorted(rows) == sorted(int(w) for w in data["weeks"]), project  # every week, empty ones too
        for week, counts in data["weeks"].items():
            got = rows[int(week)]
            for view_key, truth_key in KEYS.items():
                assert got[view_key] == counts[truth_key], (project, week, view_key)
            assert got["report_status"] is None


def test_documented_examples_run(trial: Path) -> None:
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 6
    results = [_query(trial, sql) for sql in blocks]
    curve = results[0]
    assert curve and curve[-1]["enrolled_total"] == max(r["enrolled_total"] for r in curve)
    assert any(r["sae"] > 0 for r in results[1])
    assert results[4], "deviations per site"


def test_stats_cli_and_export(trial: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["stats", "--project", "XH201", "--from", "2025-W20", "--to", "2025-W22",
                              "--format", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert [r["week_number"] for r in rows] == [202520, 202521, 202522]
    csv_out = runner.invoke(app, ["stats", "--project", "XH201", "--format", "csv"])
    assert csv_out.output.splitlines()[0].startswith("project_id,week_number,iso_year")
    exported = runner.invoke(app, ["export", "--format", "parquet", str(tmp_path / "pq")])
    assert exported.exit_code == 0, exported.output
    names = {p.stem for p in (tmp_path / "pq").glob("*.parquet")}
    assert {"raw_logs", "weekly_stats", "chronicle", "llm_usage", "memory_stats", "weekly_reports"} <= names
    with duckdb.connect() as conn:
        n = conn.execute(f"SELECT count(*) FROM '{tmp_path / 'pq' / 'weekly_stats.parquet'}'").fetchall()[0][0]
    assert n == _query(trial, "SELECT count(*) AS n FROM weekly_stats")[0]["n"]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_chart_pngs(trial: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["chart", "--project", "XH201", "--out", str(tmp_path / "charts")])
    assert result.exit_code == 0, result.output
    for name in ("XH201_enrolment.png", "XH201_safety.png"):
        path = tmp_path / "charts" / name
        assert _png_size(path) == (1210, 550)
        assert path.stat().st_size > 20_000  # bars, lines and text, not an empty canvas


DRAW = WAIT_FOR_GO + """
import duckdb
from chronicle.analytics.charts import project_charts
with duckdb.connect(sys.argv[2], read_only=True) as conn:
    cur = conn.execute("SELECT * FROM weekly_stats WHERE project_id = 'XH201' ORDER BY week_number")
    rows = [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]
for _ in range(int(sys.argv[4])):
    project_charts("XH201", rows, Path(sys.argv[3]))
"""


def test_two_processes_drawing_the_same_charts_at_once_both_succeed(trial: Path, tmp_path: Path) -> None:
    """Two backfills at once draw the same PNGs: each writes its own temporary file, then swaps it in (with one
    shared temporary name, one process's swap took the file the other was writing: FileNotFoundError)."""
    out = tmp_path / "charts"
    args = [str(trial), str(out), "10"]
    procs = start_together(DRAW, [args, args], [child_env(tmp_path / "home")] * 2, tmp_path / "go", tmp_path)
    finish(procs)  # fails on a child's error
    assert sorted(p.name for p in out.iterdir()) == ["XH201_enrolment.png", "XH201_safety.png"]  # no temp left
    assert _png_size(out / "XH201_safety.png") == (1210, 550)


def test_backfill_attaches_chart_artifacts_and_publishes_snapshot(trial: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from chronicle.flows.backfill_weeks import backfill_weeks

    backfill_weeks(project_id="XH201", start_week="2025-W20", end_week="2025-W22")
    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["charts-xh201"])))
    assert arts, "no chart artifact for XH201"
    body = str(arts[0].data)
    assert body.count("data:image/png;base64,") == 2
    assert (trial.parent / "charts" / "XH201_enrolment.png").exists()
    with duckdb.connect(str(trial.parent / "chronicle.snapshot.duckdb"), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM weekly_reports").fetchall()[0][0] == 3

"""kill -9 during ingest at seeded random points, then a rerun: nothing lost, nothing duplicated."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.reliability.killer import kill_at, kill_points, python_cmd, run

# The file-level ingest without Prefect start-up, so kill points land in the DuckDB writes.
INGEST = """
import sys
from pathlib import Path
from chronicle.ingest.detect import discover
from chronicle.ingest.pipeline import FileIngestor
from chronicle.settings import get_settings
files, _ = discover([Path(sys.argv[1])])
ing = FileIngestor(get_settings())
for f in files:
    ing.ingest(f)
"""


def _state(db: Path) -> tuple[list[tuple], int, int]:
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute("SELECT entry_id, project_id, ts, week_number, content FROM raw_logs ORDER BY 1").fetchall()
        dupes = conn.execute("SELECT count(*) - count(DISTINCT entry_id) FROM raw_logs").fetchall()[0][0]
        files = conn.execute("SELECT count(*) FROM ingest_files").fetchall()[0][0]
    return rows, dupes, files


@pytest.mark.slow
def test_kill_during_ingest_then_rerun(tmp_path: Path, sample_dir: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(sample_dir / "logs", logs)
    # Grow the files so each run spends most of its time writing, not starting up.
    for f in sorted(logs.rglob("*.jsonl")):
        text = f.read_text()
        lines = [json.loads(x) for x in text.splitlines()]
        extra = [dict(x, content=f"{x['content']} #{k}") for k in range(1, 6) for x in lines]
        f.write_text(text + "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in extra))
    csv_map = json.dumps({"study": "project_id", "time": "ts", "user": "actor", "event": "type", "text": "content"})
    base_env = {**os.environ, "CHRONICLE_COLUMN_MAP": csv_map}
    cmd = [*python_cmd(INGEST), str(logs)]

    clean_env = {**base_env, "CHRONICLE_HOME": str(tmp_path / "clean")}
    duration = run(cmd, clean_env, tmp_path)
    expected, _, n_files = _state(tmp_path / "clean" / "chronicle.duckdb")

    killed = 0
    # Start-up (imports) takes ~1 s; the writes fill the rest of `duration`.
    for i, point in enumerate(kill_points(seed=20261130, n=8, start=1.0, end=max(1.5, duration * 0.95))):
        env = {**base_env, "CHRONICLE_HOME": str(tmp_path / f"killed{i}")}
        killed += kill_at(cmd, env, tmp_path, point)
        run(cmd, env, tmp_path)
        rows, dupes, files = _state(tmp_path / f"killed{i}" / "chronicle.duckdb")
        assert dupes == 0, f"kill at {point:.2f}s"
        assert files == n_files, f"kill at {point:.2f}s"
        assert rows == expected, f"kill at {point:.2f}s"
    assert killed >= 6, f"only {killed} of 8 runs were still working when killed (run takes {duration:.1f}s)"

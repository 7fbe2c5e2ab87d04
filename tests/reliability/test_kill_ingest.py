"""kill -9 during ingest at seeded random points, then a rerun: nothing lost, nothing duplicated."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.reliability.killer import python_cmd
from tests.reliability.procs import MARK, Pace, run_marked, spread_points

# The file-level ingest without Prefect start-up; kill points are timed from MARK, after the imports.
INGEST = f"""
import sys
from pathlib import Path
from chronicle.ingest.detect import discover
from chronicle.services.ingest import FileIngestor
from chronicle.settings import Settings
files, _ = discover([Path(sys.argv[1])])
ing = FileIngestor(Settings())
print({MARK!r}, flush=True)
for f in files:
    ing.ingest(f)
"""


# The same files read in batches of three (one write window each, as `ingest` does with its batches): a
# kill lands inside a batch's parse or its commit; the rerun finishes that batch, nothing lost or doubled.
INGEST_BATCHES = f"""
import sys
from pathlib import Path
from chronicle.ingest.detect import discover
from chronicle.services.ingest import FileIngestor
from chronicle.settings import Settings
files, _ = discover([Path(sys.argv[1])])
ing = FileIngestor(Settings())
print({MARK!r}, flush=True)
for i in range(0, len(files), 3):
    ing.ingest_many(files[i:i + 3])
"""


def _state(db: Path) -> tuple[list[tuple], int, int]:
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute("SELECT entry_id, project_id, ts, week_number, content FROM raw_logs ORDER BY 1").fetchall()
        dupes = conn.execute("SELECT count(*) - count(DISTINCT entry_id) FROM raw_logs").fetchall()[0][0]
        files = conn.execute("SELECT count(*) FROM ingest_files").fetchall()[0][0]
    return rows, dupes, files


def rerun(home: Path, logs: Path, csv_map: str, batch: int) -> None:
    """The rerun after a kill, in this process: the child's code, `batch` files per write window."""
    from chronicle.ingest.detect import discover
    from chronicle.services.ingest import FileIngestor
    from chronicle.settings import Settings

    files, _ = discover([logs])
    ingestor = FileIngestor(Settings(home=home, column_map=json.loads(csv_map)))
    for i in range(0, len(files), batch):
        ingestor.ingest_many(files[i:i + batch])


N_KILLS = 5  # random points over the run, each followed by a rerun that must repair it


@pytest.mark.slow
# File by file: one project's 15 files (JSONL and the CSV), each its own write window; in batches: all 28.
@pytest.mark.parametrize(("script", "folder"), [(INGEST, "logs/XH305"), (INGEST_BATCHES, "logs")],
                         ids=["file-by-file", "batches"])
def test_kill_during_ingest_then_rerun(tmp_path: Path, sample_dir: Path, script: str, folder: str) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(sample_dir / folder, logs)
    # Grow the files (x4) so that a run writes for a few seconds: room for eight kill points.
    for f in sorted(logs.rglob("*.jsonl")):
        text = f.read_text()
        lines = [json.loads(x) for x in text.splitlines()]
        extra = [dict(x, content=f"{x['content']} #{k}") for k in range(1, 4) for x in lines]
        f.write_text(text + "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in extra))
    csv_map = json.dumps({"study": "project_id", "time": "ts", "user": "actor", "event": "type", "text": "content"})
    base_env = {**os.environ, "CHRONICLE_COLUMN_MAP": csv_map}
    cmd = [*python_cmd(script), str(logs)]

    clean_env = {**base_env, "CHRONICLE_HOME": str(tmp_path / "clean")}
    duration, _ = run_marked(cmd, clean_env, tmp_path)
    expected, _, n_files = _state(tmp_path / "clean" / "chronicle.duckdb")

    def fresh(name: str) -> dict[str, str]:
        return {**base_env, "CHRONICLE_HOME": str(tmp_path / name)}

    killed, pace = 0, Pace(duration)
    for i, point in enumerate(spread_points(seed=20261130, n=N_KILLS, start=0.05, end=max(0.1, duration * 0.9))):
        hit, name = pace.kill(cmd, tmp_path, point, fresh, f"killed{i}")
        killed += hit
        rerun(tmp_path / name, logs, csv_map, batch=3 if script is INGEST_BATCHES else 1)
        rows, dupes, files = _state(tmp_path / name / "chronicle.duckdb")
        assert dupes == 0, f"kill at {point:.2f}s"
        assert files == n_files, f"kill at {point:.2f}s"
        assert rows == expected, f"kill at {point:.2f}s"
    assert killed >= N_KILLS - 1, \
        f"only {killed} of {N_KILLS} runs were still working when killed (run takes {duration:.1f}s)"

"""kill -9 inside an ingest of a rotated folder (copytruncate, rename, compressed rotation, a copy), then a
rerun: the same rows as an undisturbed run over the same rotation — nothing lost, nothing doubled."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.reliability.killer import python_cmd
from tests.reliability.procs import Pace, run_marked, spread_points
from tests.reliability.test_kill_ingest import INGEST_BATCHES


def _lines(tag: str, n: int, day: int) -> str:
    return "".join(json.dumps({"project_id": "TRIAL", "ts": f"2026-03-{day:02d}T{8 + i % 10:02d}:{i % 60:02d}:00Z",
                               "actor": f"CRC-{i % 7}", "type": "enrollment" if i % 50 == 0 else "message",
                               "content": f"{tag} line {i}"}) + "\n" for i in range(n))


def _rows(home: Path) -> tuple[list[tuple], int]:
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        rows = conn.execute("SELECT project_id, ts, actor, type, content, week_number FROM raw_logs ORDER BY ALL")
        found = rows.fetchall()
        dupes = conn.execute("SELECT count(*) - count(DISTINCT entry_id) FROM raw_logs").fetchall()[0][0]
    return found, dupes


def _rerun(home: Path, logs: Path) -> None:
    from chronicle.ingest.detect import discover
    from chronicle.services.ingest import FileIngestor
    from chronicle.settings import Settings

    files, _ = discover([logs])
    ingestor = FileIngestor(Settings(home=home))
    for i in range(0, len(files), 3):
        ingestor.ingest_many(files[i:i + 3])


@pytest.mark.slow
def test_kill_during_a_rotated_ingest_then_rerun(tmp_path: Path) -> None:
    logs, before = tmp_path / "logs", tmp_path / "before"
    logs.mkdir()
    for k in range(6):
        (logs / f"app{k}.jsonl").write_text(_lines(f"app{k}", 8000, 2 + k % 5))
    _rerun(before, logs)  # what was read before the rotation
    for k in range(6):  # every way a log folder changes under a shipper
        app = logs / f"app{k}.jsonl"
        with app.open("a") as fh:
            fh.write(_lines(f"late{k}", 500, 9))
        if k % 3 == 0:  # copytruncate
            shutil.copy2(app, logs / f"app{k}.jsonl.1")
            app.write_text(_lines(f"new{k}", 3000, 10))
        elif k % 3 == 1:  # rename + create, compressed
            with gzip.open(logs / f"app{k}.jsonl.1.gz", "wb") as fh:
                fh.write(app.read_bytes())
            app.write_text(_lines(f"new{k}", 3000, 10))
        else:  # a copy beside the original
            shutil.copy(app, logs / f"app{k}-copy.jsonl")
    cmd = [*python_cmd(INGEST_BATCHES), str(logs)]

    def fresh(name: str) -> dict[str, str]:
        shutil.copytree(before, tmp_path / name)
        return {**os.environ, "CHRONICLE_HOME": str(tmp_path / name)}

    duration, _ = run_marked(cmd, fresh("clean"), tmp_path)
    expected, dupes = _rows(tmp_path / "clean")
    assert dupes == 0 and len(expected) == 6 * 8500 + 4 * 3000
    killed, pace = 0, Pace(duration)
    for i, point in enumerate(spread_points(seed=20261203, n=5, start=0.05, end=max(0.1, duration * 0.9))):
        hit, name = pace.kill(cmd, tmp_path, point, fresh, f"killed{i}")
        killed += hit
        _rerun(tmp_path / name, logs)
        rows, dupes = _rows(tmp_path / name)
        assert dupes == 0, f"kill at {point:.2f}s"
        assert rows == expected, f"kill at {point:.2f}s"
    assert killed >= 3, f"only {killed} of 5 runs were still working when killed (run takes {duration:.1f}s)"

"""A full disk (a small tmpfs as CHRONICLE_HOME) at whatever point of a run it strikes: the command's exit, its
`pipeline_runs` row and Prefect's state of the run agree; a full disk is said in one line, never a traceback; and
once space is freed the rerun finishes with nothing lost and no temporary file left behind.

The free space left before each run is swept over a few levels, so the disk fills at different writes (a
commit's WAL, the CHECKPOINT of the read snapshot, its copy, the charts). Mounting needs root: skipped otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from tests.conftest import SAMPLE_MAP
from tests.deployments.conftest import CHRONICLE

# The command's own answer, not the run's Logs tab: Prefect logs a failed task or flow run with its exception there
# (and so on the console), whatever the cause; what the command itself says must be one line.
CLI_TRACEBACK = "─ Traceback (most recent call last) ─"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs (the full disk) needs root")]


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs: the disk that fills."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


class FullDisk:
    def __init__(self, mnt: Path, env: dict[str, str], cwd: Path) -> None:
        self.mnt, self.env, self.cwd = mnt, env, cwd
        self.home = mnt / "home"
        self.filler = mnt / "filler"

    def fresh(self, template: Path | None = None) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        self.filler.unlink(missing_ok=True)
        if template is None:
            self.home.mkdir()
        else:
            shutil.copytree(template, self.home)

    def fill(self, free_kb: int) -> None:
        """Leave `free_kb` free on the disk."""
        size = shutil.disk_usage(self.mnt).free - free_kb * 1024
        if size > 0:
            fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT)
            try:
                os.posix_fallocate(fd, 0, size)
            finally:
                os.close(fd)

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def chronicle(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CHRONICLE, *args], env=self.env, cwd=self.cwd, capture_output=True, text=True,
                              timeout=600)

    def last_run(self) -> dict:
        """The newest run as `chronicle runs --prefect` shows it once space is freed: its row and Prefect's state."""
        shown = self.chronicle("runs", "-n", "1", "--prefect", "--format", "json")
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)[0]

    def assert_agrees(self, done: subprocess.CompletedProcess[str], free_kb: int) -> None:
        where = f"{free_kb} KB free: exit {done.returncode}\n{done.stderr[-3000:]}"
        assert CLI_TRACEBACK not in done.stderr, where
        self.free()
        run = self.last_run()
        assert run["state"].title() == run["prefect_state"], (run["state"], run["prefect_state"], run["message"], where)
        if done.returncode == 0:
            assert run["state"] == "COMPLETED", where
        else:
            assert run["state"] == "FAILED", where
            assert "No space left on device" in run["message"], run["message"]
            assert "the disk is full" in done.stderr, where

    def assert_no_temporary_files(self) -> None:
        """No temporary copy, and no journal or room set aside for a run's row, once the rerun has recorded them."""
        left = sorted({p.name for pattern in ("*.tmp", ".*.tmp", "pending_runs*") for p in self.home.rglob(pattern)})
        assert not left, left


@pytest.fixture
def full_disk(disk: Path, tmp_path: Path) -> FullDisk:
    from prefect.settings import PREFECT_API_URL

    api_url = PREFECT_API_URL.value()  # the session's server (tests/conftest.py `prefect_api`)
    env = {**os.environ, "CHRONICLE_HOME": str(disk / "home"), "PREFECT_API_URL": api_url,
           "PREFECT_LOGGING_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1", "CHRONICLE_WARM": "0",
           "CHRONICLE_COLUMN_MAP": json.dumps(SAMPLE_MAP), "CHRONICLE_INPUT_ROOTS": json.dumps([str(tmp_path)])}
    return FullDisk(disk, env, tmp_path)


def _entries(home: Path) -> int:
    with duckdb.connect(str(home / "chronicle.duckdb"), read_only=True) as conn:
        return conn.execute("SELECT count(*) FROM raw_logs").fetchall()[0][0]


@pytest.mark.parametrize("free_kb", [200, 1000, 2000, 3000, 4000])
def test_an_ingest_on_a_full_disk_exits_as_its_run_is_recorded(full_disk: FullDisk, sample_dir: Path,
                                                               ingested_home: Path, tmp_path: Path,
                                                               free_kb: int) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(sample_dir / "logs", logs)
    full_disk.fresh()
    full_disk.fill(free_kb)
    full_disk.assert_agrees(full_disk.chronicle("ingest", str(logs)), free_kb)
    again = full_disk.chronicle("ingest", str(logs))  # space freed: the rerun stores everything, once
    assert again.returncode == 0, again.stderr
    assert _entries(full_disk.home) == _entries(ingested_home)  # the same logs ingested with room to spare
    full_disk.assert_no_temporary_files()


WEEKS = ("backfill", "--all", "--from", "2025-W10", "--to", "2026-W10")


def _backfill_at(full_disk: FullDisk, ingested_home: Path, free_kb: int) -> None:
    full_disk.fresh(ingested_home)
    full_disk.fill(free_kb)
    full_disk.assert_agrees(full_disk.chronicle(*WEEKS), free_kb)
    again = full_disk.chronicle(*WEEKS)
    assert again.returncode == 0, again.stderr
    assert full_disk.last_run()["state"] == "COMPLETED"
    full_disk.assert_no_temporary_files()


# 300 KB: the first weeks' commits fail; 6000 KB: the weeks are stored, the charts and the snapshot are not.
@pytest.mark.parametrize("free_kb", [300, 6000])
def test_a_backfill_on_a_full_disk_exits_as_its_run_is_recorded(full_disk: FullDisk, ingested_home: Path,
                                                                free_kb: int) -> None:
    _backfill_at(full_disk, ingested_home, free_kb)


def test_a_failed_run_whose_row_the_full_disk_refuses_is_not_reported_killed(full_disk: FullDisk,
                                                                            ingested_home: Path) -> None:
    # 2000 KB: the weeks fill the disk to its last byte, so the run's FAILED row is refused, and so is its line in
    # the journal beside the database; `chronicle runs` later calls the run CRASHED ("killed, or the machine
    # stopped") while Prefect and the command said Failed: the disk is full.
    _backfill_at(full_disk, ingested_home, 2000)


def test_setup_on_a_full_disk_says_so_in_one_line(full_disk: FullDisk) -> None:
    full_disk.fresh()
    full_disk.fill(20)
    done = full_disk.chronicle("setup", "--no-work-pool")
    assert done.returncode == 1
    assert CLI_TRACEBACK not in done.stderr and "the disk is full" in done.stderr, done.stderr

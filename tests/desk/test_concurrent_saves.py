"""Corrections under concurrency, with real processes on the sample trial's DuckDB file: several people saving the
same week at once (one wins, the others are refused with the diff, nothing lost), and a save landing while
`chronicle backfill --force` is regenerating the week (the run never overwrites it). Slow layer (END_TO_END)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chronicle.settings import Settings
from tests.desk.conftest import PROJECT
from tests.lake.helpers import WAIT_FOR_GO, finish, start_together
from tests.reliability.procs import child_env

pytestmark = pytest.mark.timeout(600)
WEEK = "2025-W30"

# Each child saves its own correction of the week against version argv[2] once the go-file exists, and prints
# the outcome as one JSON line.
SAVE = WAIT_FOR_GO + """
import json
from chronicle.services.reports import VersionConflict, edit_report
from chronicle.settings import Settings
from chronicle.weeks import IsoWeek
who, base = sys.argv[3], int(sys.argv[2])
try:
    r = edit_report(Settings(), "XH201", IsoWeek.parse("2025-W30"), f"{who} 的更正 [E9]。", author=who,
                    reason="race", base_version=base)
    print(json.dumps({"who": who, "version": r.version}), flush=True)
except VersionConflict as exc:
    print(json.dumps({"who": who, "conflict": exc.current_version, "diff": exc.diff_lines}), flush=True)
"""

# `chronicle backfill --force` of the written weeks, stopping right before its first report write window (the
# texts are generated, the plan saw version 1) until the test has saved its correction.
BACKFILL_PAUSED = """
import sys, time
from pathlib import Path
import chronicle.storage.reports as writer
write = writer.ReportWriter._write
def paused(self, tickets):
    if not Path(sys.argv[2]).exists():
        Path(sys.argv[1]).write_text("about to write")
        while not Path(sys.argv[2]).exists():
            time.sleep(0.01)
    write(self, tickets)
writer.ReportWriter._write = paused
from chronicle.cli.main import app
app(["backfill", "--project", "XH201", "--from", "2025-W29", "--to", "2025-W31", "--force", "--workers", "1"])
"""


def _versions(settings: Settings) -> list[tuple]:
    from chronicle.storage.db import connect

    with connect(settings) as conn:
        return conn.execute("SELECT version, status, author, summary FROM weekly_report_versions WHERE project_id = ?"
                            " AND week_number = 202530 ORDER BY version", [PROJECT]).fetchall()


def test_people_saving_one_week_at_once_one_wins_the_others_see_why(written: Settings, tmp_path: Path) -> None:
    from prefect.settings import PREFECT_API_URL

    people = ["ana", "bo", "cai"]
    env = child_env(written.home, PREFECT_API_URL.value())
    procs = start_together(SAVE, [["1", who] for who in people], [env for _ in people],
                           tmp_path / "go", tmp_path)
    outcomes = [json.loads(out.strip().splitlines()[-1]) for out in finish(procs)]
    won = [o for o in outcomes if "version" in o]
    lost = [o for o in outcomes if "conflict" in o]
    assert len(won) == 1 and len(lost) == len(people) - 1, outcomes
    winner = won[0]["who"]
    for o in lost:  # each refusal says what the week became: the winner's text, in a diff from version 1
        assert o["conflict"] == 2 and f"+{winner} 的更正 [E9]。" in o["diff"], o
    rows = _versions(written)
    assert [(v, s, a) for v, s, a, _ in rows] == [(1, "generated", rows[0][2]), (2, "edited", winner)]
    from chronicle.services.audit import audit_trail

    trail = sorted((r.actor, r.outcome) for r in audit_trail(written, PROJECT, 202530))
    assert trail == sorted((o["who"], "ok" if o["who"] == winner else "refused:version-conflict")
                           for o in outcomes)


def test_a_save_during_backfill_force_is_never_overwritten_by_that_run(written: Settings, tmp_path: Path) -> None:
    from prefect.settings import PREFECT_API_URL

    from chronicle.services.reports import edit_report
    from chronicle.weeks import IsoWeek

    ready, go_on = tmp_path / "about-to-write", tmp_path / "edit-saved"
    proc = subprocess.Popen([sys.executable, "-c", BACKFILL_PAUSED, str(ready), str(go_on)],
                            env=child_env(written.home, PREFECT_API_URL.value()), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not ready.exists():  # the event: the run planned and wrote its texts, before storing them
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        result = edit_report(written, PROJECT, IsoWeek.parse(WEEK), "审阅人的更正：本周入组 3 人 [E9]。",
                             author="ana", reason="during the backfill", base_version=1)
        go_on.write_text("saved")
        out, err = proc.communicate(timeout=500)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert "skipped-edited 1" in out and "generated 2" in out, out
    rows = _versions(written)
    assert rows[-1][:3] == (result.version, "edited", "ana") and len(rows) == result.version
    from chronicle.storage.db import read
    from chronicle.storage.reports import get_report

    now = read(written, get_report, PROJECT, 202530)
    assert (now["status"], now["summary"], now["version"]) == ("edited", "审阅人的更正：本周入组 3 人 [E9]。",
                                                               result.version)

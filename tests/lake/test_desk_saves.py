"""Corrections in the lake topology (DuckLake on PostgreSQL + S3): two people saving one week at once while a lake
worker regenerates the project's weeks, all in separate processes. Whatever the order, every successful save is a
version of its own that no run overwrote, every refusal says what the week became, and version numbers stay unique."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.lake.helpers import WAIT_FOR_GO, child_env, finish, settings_for, start_together

pytestmark = pytest.mark.timeout(600)
WEEKS = (202529, 202530, 202531)

CHILD = WAIT_FOR_GO + """
import json
from chronicle.services.reports import VersionConflict, edit_report
from chronicle.services.weekly import plan_week, run_week
from chronicle.settings import Settings
from chronicle.weeks import IsoWeek
role, who = sys.argv[2], sys.argv[3]
settings = Settings()
if role == "worker":  # a lake worker regenerating the project's weeks
    outcomes = [run_week(settings, plan_week(settings, "XH201", IsoWeek.from_number(n), force=True),
                         "worker").outcome.outcome for n in (202529, 202530, 202531)]
    print(json.dumps({"who": who, "outcomes": outcomes}), flush=True)
else:
    try:
        r = edit_report(settings, "XH201", IsoWeek.from_number(202530), f"{who} 的更正 [E9]。", author=who,
                        reason="lake race", base_version=1)
        print(json.dumps({"who": who, "version": r.version}), flush=True)
    except VersionConflict as exc:
        print(json.dumps({"who": who, "conflict": exc.current_version, "diff": exc.diff_lines}), flush=True)
"""


def test_two_saves_and_a_lake_worker_at_once(home: Path, lake_env: dict[str, str], sample_dir: Path,
                                             tmp_path: Path) -> None:
    from chronicle.services.ingest import FileIngestor
    from chronicle.services.weekly import plan_week, run_week
    from chronicle.storage.db import connect
    from chronicle.weeks import IsoWeek

    settings = settings_for(home, lake_env)
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(sample_dir / "logs" / "XH201" / "2025-07.jsonl", folder / "2025-07.jsonl")
    FileIngestor(settings).ingest(folder / "2025-07.jsonl")
    for number in WEEKS:
        run_week(settings, plan_week(settings, "XH201", IsoWeek.from_number(number)), "first")

    env = child_env(home, lake_env)
    procs = start_together(CHILD, [["save", "ana"], ["save", "bo"], ["worker", "w"]], [env] * 3, tmp_path / "go",
                           tmp_path)
    outcomes = {o["who"]: o for o in (json.loads(out.strip().splitlines()[-1]) for out in finish(procs))}
    with connect(settings) as conn:
        versions = conn.execute("SELECT version, status, author, summary FROM weekly_report_versions "
                                "WHERE project_id = 'XH201' AND week_number = 202530 ORDER BY version").fetchall()
        current = conn.execute("SELECT version, status, summary FROM weekly_reports "
                               "WHERE project_id = 'XH201' AND week_number = 202530").fetchall()
    numbers = [v for v, *_ in versions]
    assert numbers == list(range(1, len(numbers) + 1)), versions  # unique, no gap: one writer at a time
    assert len(current) == 1 and current[0][0] == numbers[-1]
    saved = [o for who, o in outcomes.items() if who != "w" and "version" in o]
    assert len(saved) <= 1  # both were made against version 1: at most one of them can land
    for o in saved:
        assert (o["version"], "edited", o["who"], f"{o['who']} 的更正 [E9]。") in versions
        assert current[0][1:] == ("edited", f"{o['who']} 的更正 [E9]。")  # the worker never overwrote it
    for who in ("ana", "bo"):
        o = outcomes[who]
        if "conflict" in o:  # refused with what the week became
            assert o["conflict"] > 1 and o["diff"][:1] == ["--- version 1"], o
    if not saved:  # the worker regenerated the week first: both saves refused, nothing lost
        assert outcomes["w"]["outcomes"][1] == "generated"

"""Backfill on the sample trial with the offline engine: ground-truth stats, cache, edits, late entries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.weekly.conftest import db_rows

pytestmark = pytest.mark.timeout(300)
COUNT_KEYS = {"entries": "entries", "enrolled": "enrolled", "enrolled_total": "enrolled_total", "ae": "ae",
              "sae": "sae", "deviations": "deviation", "queries": "query", "decisions": "decision",
              "messages": "message"}


def _expected(row: dict[str, Any]) -> dict[str, Any]:
    out = {ours: row[theirs] for ours, theirs in COUNT_KEYS.items()}
    out["by_type"] = {k: v for k, v in row.items()
                      if k not in ("entries", "enrolled", "enrolled_total", "by_actor") and v}
    out["by_actor"] = row["by_actor"]
    return out


def _artifacts(flow_run_id: str) -> dict[str, Any]:
    """The artifacts one flow run published (the Prefect API is shared by the whole session)."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(flow_run_id)])))
    return {a.key: a for a in found if a.key}


def _task_runs(flow_run_id: str, name: str) -> list[Any]:
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        found = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(flow_run_id)])),
                                      limit=200)
    return [t for t in found if t.name.startswith(name)]


def test_offline_backfill_of_the_sample_matches_ground_truth_then_caches(trial: Path, truth: dict,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.services.weekly import COMMIT_EVERY
    from chronicle.storage.reports import ReportWriter

    windows = []  # the report write windows (the real writes, counted)
    write = ReportWriter._write
    monkeypatch.setattr(ReportWriter, "_write", lambda self, tickets: (windows.append(len(tickets)),
                                                                       write(self, tickets))[1])
    rows = backfill_weeks(project_id="all")
    by_week = {(r.project, r.week_number): r for r in rows}
    for project, data in truth["projects"].items():
        stored = {w: json.loads(s) for w, s in db_rows(
            "SELECT week_number, stats FROM weekly_reports WHERE project_id = ?", [project])}
        assert sorted(stored) == sorted(int(w) for w in data["weeks"]), project  # every week, gaps included
        for week, expected in data["weeks"].items():
            got = {k: v for k, v in stored[int(week)].items()}
            assert got == _expected(expected), (project, week)
            assert by_week[(project, int(week))].outcome == ("empty" if expected["entries"] == 0 else "generated")
    assert by_week[("XH305", 202608)].outcome == "empty"  # the Spring Festival week: no gap in the chronicle
    summaries = db_rows("SELECT model, needs_review, summary FROM weekly_reports")
    assert {m for m, _, _ in summaries} == {"offline-extractive", "none"}
    assert not any(flag for _, flag, _ in summaries)  # extractive reports agree with their own stats
    from chronicle.weekly.offline import clean_length

    assert max(clean_length(s) for _, _, s in summaries) <= 500
    assert db_rows("SELECT count(*) FROM llm_calls") == [(0,)]  # the offline engine calls nobody
    [(run_id,)] = db_rows("SELECT flow_run_id FROM pipeline_runs WHERE flow_name = 'backfill-weeks'")
    artifacts = _artifacts(run_id)
    # One outcome table, summary and progress per run, not one card per week; every week is a row of the
    # table with the command showing its report, and the weeks ran as a handful of task runs.
    assert {"backfill-all", "backfill-all-progress", "backfill-all-summary"} <= set(artifacts)
    assert not [k for k in artifacts if k.startswith("report-")]
    table = {(r["project"], r["week"]): r for r in json.loads(artifacts["backfill-all"].data)}
    assert len(table) == len(rows)
    assert table[("XH201", "2025-W30")]["report"] == "chronicle report show -p XH201 -w 2025-W30"
    assert artifacts["backfill-all-progress"].data == 100.0
    groups = len(_task_runs(run_id, "summarize-"))
    assert 0 < groups <= len(rows) // 4
    # Offline weeks are stored a group at a time (services/weekly.py COMMIT_EVERY), not a write window per
    # handful of weeks (4 a window, then 16, when the windows were most of an offline backfill's cost).
    assert sum(windows) == len(rows) and len(windows) <= groups + len(rows) // COMMIT_EVERY, windows

    again = backfill_weeks(project_id="all")
    assert {r.outcome for r in again} == {"cached"} and len(again) == len(rows)
    assert db_rows("SELECT count(*), max(version) FROM weekly_report_versions") == [(len(rows), 1)]


def test_an_edit_survives_regeneration_and_is_the_chronicle(trial: Path) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.services.history import build_history_context
    from chronicle.services.weekly import read_week
    from chronicle.settings import Settings
    from chronicle.storage import reports
    from chronicle.storage.db import connect, transaction
    from chronicle.weeks import IsoWeek

    backfill_weeks(project_id="XH201", start_week="2025-W20", end_week="2025-W23")
    week = IsoWeek.parse("2025-W22")
    current, stored = read_week(Settings(), "XH201", week)
    with transaction(Settings()) as conn:
        reports.save_edit(conn, "XH201", week.number, "人工修正：本周 PI 会议确认入组节奏 [E2]。",
                          citations={"E2": current.citation_map["E2"]}, input_hash=current.input_hash,
                          stats=current.stats, author="dr-li", reason="typo", base_version=stored.version,
                          review_reasons=[])

    rows = backfill_weeks(project_id="XH201", start_week="2025-W20", end_week="2025-W23", force=True)
    outcome = {r.week: r.outcome for r in rows}
    assert outcome == {"2025-W20": "generated", "2025-W21": "generated", "2025-W22": "skipped-edited",
                       "2025-W23": "generated"}
    with connect(Settings()) as conn:
        row = reports.get_report(conn, "XH201", week.number)
        assert (row["status"], row["stale"]) == ("edited", False)
    context = build_history_context(Settings(), "XH201")
    assert "[Week 202522]: 人工修正：本周 PI 会议确认入组节奏。" in context.splitlines()

    rows = backfill_weeks(project_id="XH201", start_week="2025-W22", end_week="2025-W22", overwrite_edited=True)
    assert rows[0].outcome == "generated"
    history = db_rows("SELECT version, status, author, reason FROM weekly_report_versions "
                      "WHERE project_id = 'XH201' AND week_number = 202522 ORDER BY version")
    assert [h[1] for h in history] == ["generated", "edited", "generated"]
    assert history[1][2:] == ("dr-li", "typo")  # the edit stays in the history


def test_a_late_entry_regenerates_exactly_its_week_and_marks_an_edit_stale(home: Path, sample_dir: Path,
                                                                          tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.ingest_logs import ingest_logs

    logs = tmp_path / "logs"
    shutil.copytree(sample_dir / "logs" / "XH201", logs / "XH201")
    ingest_logs([str(logs)])
    first = backfill_weeks(project_id="XH201")
    assert len(first) == 56

    totals = dict(db_rows("SELECT week_number, stats->>'enrolled_total' FROM weekly_reports"))
    late = {"project_id": "XH201", "ts": "2025-07-23T15:00:00+08:00", "actor": "CRC-王敏", "type": "enrollment",
            "content": "补录：XH201-01-099 入组成功（A 组（试验组）），筛选期检查均符合入排标准，已在 IWRS 登记"}
    with (logs / "XH201" / "2025-07.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(late, ensure_ascii=False) + "\n")
    assert ingest_logs([str(logs)]).entries_added == 1
    rows = backfill_weeks(project_id="XH201")
    changed = [(r.week, r.outcome) for r in rows if r.outcome != "cached"]
    assert changed == [("2025-W30", "generated")]  # exactly that week is written again
    after = dict(db_rows("SELECT week_number, stats->>'enrolled_total' FROM weekly_reports"))
    assert {w for w in after if after[w] != totals[w]} == {w for w in after if w >= 202530}
    assert all(int(after[w]) == int(totals[w]) + 1 for w in after if w >= 202530)
    # Later weeks keep their text, but a text stating the old running total is now flagged, not trusted.
    flagged = {w: json.loads(r) for w, r in db_rows(
        "SELECT week_number, review_reasons FROM weekly_reports WHERE needs_review")}
    assert flagged and min(flagged) > 202530
    assert all(r[0]["field"] == "enrolled_total" for r in flagged.values())

    # A late entry for a human-edited week keeps the edit but marks it stale.
    from chronicle.services.weekly import read_week
    from chronicle.settings import Settings
    from chronicle.storage import reports
    from chronicle.storage.db import transaction
    from chronicle.weeks import IsoWeek

    week = IsoWeek.parse("2025-W31")
    current, stored = read_week(Settings(), "XH201", week)
    with transaction(Settings()) as conn:
        reports.save_edit(conn, "XH201", week.number, "人工周报", citations={}, input_hash=current.input_hash,
                          stats=current.stats, author="a", reason="fix", base_version=stored.version,
                          review_reasons=[])
    late["ts"], late["content"] = "2025-07-30T10:00:00+08:00", "补录：XH201-02-001 C2D1 访视顺利"
    with (logs / "XH201" / "2025-07.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(late, ensure_ascii=False) + "\n")
    ingest_logs([str(logs)])
    rows = backfill_weeks(project_id="XH201")
    assert [(r.week, r.outcome) for r in rows if r.outcome != "cached"] == [("2025-W31", "skipped-edited")]
    assert db_rows("SELECT summary, stale FROM weekly_reports WHERE week_number = 202531") == [("人工周报", True)]

"""Guard v2 raises no false alarm on the offline engine's own reports over real weeks:
every week of the sample trial (both projects) and a year of this machine's Debian changelog weeks."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import pytest

from bench.offline_data import DOCS, write_jsonl


def _flagged(settings, project: str) -> tuple[int, list[str]]:
    from chronicle.redaction.configured import redactor_for
    from chronicle.storage import week_inputs
    from chronicle.storage.db import connect
    from chronicle.weekly.engine import offline_week
    from chronicle.weekly.faithfulness import describe
    from chronicle.weekly.model import make_week_input
    from chronicle.weeks import IsoWeek, week_range

    with connect(settings) as conn:
        first, last = week_inputs.week_span(conn, project)
        rows = week_inputs.week_rows(conn, project, first, last)
        running = week_inputs.enrolled_before(conn, project, first)
    weeks, alarms = 0, []
    for week in week_range(IsoWeek.from_number(first), IsoWeek.from_number(last)):
        week_input = make_week_input(project, week, rows.get(week.number, []), running, settings.tz_for(project),
                                     redactor_for(settings))
        running = week_input.stats["enrolled_total"]
        if not week_input.entries:
            continue
        weeks += 1
        report = offline_week(week_input, settings.weekly.report_max_chars)
        alarms += [f"{project} {week}: {describe(r)}" for r in report.review_reasons]
    return weeks, alarms


def test_no_false_alarm_on_the_sample_trial(ingested_home: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.settings import Settings

    home = tmp_path / "home"
    shutil.copytree(ingested_home, home)
    monkeypatch.setenv("CHRONICLE_HOME", str(home))
    settings = Settings()
    for project in ("XH201", "XH305"):
        weeks, alarms = _flagged(settings, project)
        assert weeks > 40 and alarms == []


@pytest.mark.slow
@pytest.mark.skipif(not any(DOCS.glob("*/changelog.Debian.gz")), reason="no Debian changelogs on this machine")
def test_no_false_alarm_on_debian_changelog_weeks(settings, tmp_path: Path) -> None:
    from chronicle.services.ingest import FileIngestor

    data = tmp_path / "debian.jsonl"
    lines, _ = write_jsonl(data, datetime(2022, 1, 1), datetime(2023, 1, 1))
    if lines < 100:
        pytest.skip("too few Debian uploads dated 2022 on this machine")
    FileIngestor(settings).ingest(data)
    weeks, alarms = _flagged(settings, "debian")
    assert weeks > 20 and alarms == []

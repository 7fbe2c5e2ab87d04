"""`chronicle backfill|weekly|report|context|ask` through the typer app, and the weekly flows' run names."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.weekly.conftest import db_rows

pytestmark = pytest.mark.timeout(300)
runner = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables at 200 columns, so assertions see whole cells (a terminal of 80 would wrap them)."""
    from chronicle.cli.common import console

    monkeypatch.setattr(console, "_width", 200)


def _cli(*args: str, code: int = 0) -> str:
    from chronicle.cli.main import app

    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def test_backfill_show_edit_history_context_ask(trial: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _cli("backfill", "--project", "XH201", "--from", "2025-W29", "--to", "2025-W31")
    assert "engine: offline-extractive" in out and "generated 3" in out

    shown = _cli("report", "show", "--project", "XH201", "--week", "2025-W30")
    assert "generated · offline-extractive" in shown and "本周记录 44 条" in shown and "| 累计入组 |" in shown

    fixed = tmp_path / "fixed.md"
    fixed.write_text("人工修正：本周入组 3 人 [E9]，其中 1 例入排标准违背已上报 [E12]。\n", encoding="utf-8")
    out = _cli("report", "edit", "--project", "XH201", "--week", "2025-W30", "--file", str(fixed),
               "--reason", "补充偏离说明", "--author", "dr-li")
    assert "stored version 2" in out

    # $EDITOR path: click runs "$EDITOR <file>"; this editor appends a line.
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[1], 'a', encoding='utf-8').write('\\n另：监查已完成。')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.setenv("USER", "crc-wang")
    # Who and why are said explicitly (the shell user is never taken silently); the guard reads the new text:
    # the added sentence cites no entry, so the week awaits a sign-off.
    _cli("report", "edit", "--project", "XH201", "--week", "2025-W30", "--reason", "监查补充", code=2)
    out = _cli("report", "edit", "--project", "XH201", "--week", "2025-W30", "--reason", "监查补充",
               "--author", "crc-wang")
    assert "stored version 3" in out and "needs review: no citation: “另：监查已完成。”" in out
    assert "accepted XH201 2025-W30 version 3" in _cli("review", "accept", "-p", "XH201", "-w", "2025-W30",
                                                          "--by", "dr-li")

    history = _cli("report", "history", "--project", "XH201", "--week", "2025-W30")
    for expected in ("generated", "edited", "dr-li", "补充偏离说明", "crc-wang"):
        assert expected in history
    again = _cli("backfill", "--project", "XH201", "--from", "2025-W29", "--to", "2025-W31", "--force")
    assert "skipped-edited" in again and "generated 2" in again

    context = _cli("context", "--project", "XH201")
    assert "[Week 202530]: 人工修正：本周入组 3 人，其中 1 例入排标准违背已上报。 另：监查已完成。" in context
    assert context.splitlines()[0] == "=== 项目编年史 (Project Chronicle) ==="

    answer = _cli("ask", "--project", "XH201", "哪周有入排标准违背？")
    assert "offline" in answer and "[Week 202530]" in answer


def test_backfill_needs_exactly_one_scope(trial: Path) -> None:
    from chronicle.cli.main import app

    result = runner.invoke(app, ["backfill", "--project", "XH201", "--all"])
    assert result.exit_code != 0 and "exactly one" in result.output


def test_show_of_a_missing_week_fails_with_a_hint(trial: Path) -> None:
    from chronicle.cli.main import app

    result = runner.invoke(app, ["report", "show", "--project", "XH201", "--week", "2025-W30"])
    assert result.exit_code == 1


def test_weekly_flow_writes_the_last_completed_week_of_every_project(trial: Path) -> None:
    from uuid import UUID

    from prefect.client.orchestration import get_client

    from chronicle.flows.summarize_week import summarize_week
    from chronicle.flows.weekly_chronicle import weekly_chronicle
    from chronicle.settings import Settings
    from chronicle.weeks import last_completed_week

    rows = weekly_chronicle(week="2026-W05")
    assert {(r.project, r.week, r.outcome) for r in rows} == {("XH201", "2026-W05", "generated"),
                                                                       ("XH305", "2026-W05", "generated")}
    out = _cli("weekly")  # default: the week before this one, in each project's timezone
    expected = str(last_completed_week(datetime.now(UTC), Settings().tz_for("XH201")))
    assert expected in out
    weeks = {w for w, in db_rows("SELECT DISTINCT week_number FROM weekly_reports")}
    assert weeks == {202605, int(expected.replace("-W", ""))}

    summarize_week("XH201", "2026-W06")
    [(run_id,)] = db_rows("SELECT flow_run_id FROM pipeline_runs WHERE flow_name = 'summarize-week'")
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(UUID(run_id)).name == "weekly-XH201-2026W06"


def test_a_run_started_from_the_terminal_has_its_summary_on_its_prefect_page(trial: Path, tmp_path: Path) -> None:
    """`chronicle backfill` in a real process with the command line's own logging defaults: the terminal shows no
    Prefect INFO lines, and the run's Logs tab in the UI has its one-line summary, as a deployment's run has."""
    import os
    import subprocess

    from prefect.settings import PREFECT_API_URL

    from chronicle.settings import Settings
    from chronicle.storage.db import connect
    from tests.conftest import flow_run_logs

    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_LOGGING")}
    env.update(PREFECT_API_URL=str(PREFECT_API_URL.value()), CHRONICLE_HOME=str(trial),
               PYTHONPATH=os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")])))
    script = "import sys; from chronicle.cli.main import app; sys.argv[0] = 'chronicle'; app()"
    done = subprocess.run([sys.executable, "-c", script, "backfill", "--project", "XH201", "--from", "2025-W29",
                           "--to", "2025-W30"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "| INFO" not in done.stderr + done.stdout
    with connect(Settings(), read_only=True) as conn:
        (run_id,) = conn.execute("SELECT flow_run_id FROM pipeline_runs WHERE flow_name = 'backfill-weeks' "
                                 "ORDER BY started_at DESC LIMIT 1").fetchone()
    summary = "2 week(s) of XH201 2025-W29..2025-W30"
    assert any(summary in line for line in flow_run_logs(run_id, summary))

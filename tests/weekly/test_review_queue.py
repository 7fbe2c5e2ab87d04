"""The review queue: a reply that cites nothing is asked once more, then stored flagged with its
reasons; `chronicle review` lists it (table and JSON), the chronicle block marks it (or leaves it out), and
`chronicle review accept` clears it, which the `review_backlog` view counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakellm import FakeLLMServer, Reply
from tests.weekly.conftest import db_rows

pytestmark = pytest.mark.timeout(300)
runner = CliRunner()
UNCITED = "**本周要点**：入组进展见统计；安全性事件已按要求上报；无其他重大变化。"


def _cli(*args: str, code: int = 0) -> str:
    from chronicle.cli.main import app

    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def test_uncited_reply_is_asked_again_flagged_listed_marked_and_accepted(
        trial: Path, online: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.summarize_week import summarize_week
    from chronicle.services.history import build_history_context
    from chronicle.settings import Settings
    from chronicle.weekly.context import FLAGGED_MARK

    online.enqueue(Reply(content=UNCITED))
    online.enqueue(Reply(content=UNCITED))  # asked once more: still nothing cited
    row = summarize_week("XH201", "2025-W30")
    assert row.needs_review and row.llm_calls == 2
    assert db_rows("SELECT purpose FROM llm_calls ORDER BY started_at") == [("weekly_report",), ("cite",)]
    assert any("安全性事件已按要求上报" in r and "cites no entry" in r for r in row.reasons)

    listed = json.loads(_cli("review", "--format", "json"))
    assert [(w["project_id"], w["week"]) for w in listed] == [("XH201", "2025-W30")]
    # Nothing cited, so the week's SAE, AE and deviation are not covered either.
    assert {r["kind"] for r in listed[0]["reasons"]} == {"uncited", "omitted_event"}
    assert any("无其他重大变化" in r["line"] for r in listed[0]["reasons"])  # which sentence, and why
    table = _cli("review")
    assert "XH201 2025-W30" in table and "无其他重大变化" in table and "1 week(s) await review" in table
    backlog = json.loads(_cli("review", "backlog", "--format", "json"))
    assert backlog[0]["weeks_awaiting_review"] == 1

    block = build_history_context(Settings(), "XH201")
    assert f"[Week 202530]: {FLAGGED_MARK}" in block
    monkeypatch.setenv("CHRONICLE_CONTEXT_FLAGGED_WEEKS", "omit")
    assert "[Week 202530]" not in build_history_context(Settings(), "XH201")

    assert "accepted XH201 2025-W30 version 1" in _cli("review", "accept", "-p", "XH201", "-w", "2025-W30",
                                                          "--by", "dr-li", "--note", "checked against the log")
    assert json.loads(_cli("review", "--format", "json")) == []
    assert "[Week 202530]" in build_history_context(Settings(), "XH201")
    assert db_rows("SELECT needs_review, reviewed_by, reviewed_version FROM weekly_reports") == [(False, "dr-li", 1)]
    backlog = json.loads(_cli("review", "backlog", "--format", "json"))
    assert (backlog[0]["weeks_awaiting_review"], backlog[0]["weeks_accepted"]) == (0, 1)
    _cli("review", "accept", "-p", "XH201", "-w", "2025-W30", code=1)  # nothing to accept any more

"""A reasoning model's weekly report: Ollama serving a `<think>` model, through the real `openai`
client over HTTP. The thinking is neither the report nor counted against its length; its tokens are counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakellm import FakeLLMServer
from tests.fakellm.replies import REASONING, safety_sentence

MARKER = "THINKING-MARKER"


def test_weekly_report_of_a_thinking_model_stores_only_the_answer(trial: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.flows.backfill_weeks import backfill_weeks
    from tests.weekly.conftest import db_rows

    answer = "## 本周要点\n\n- 项目按计划推进 [E1]。\n"
    with FakeLLMServer(style="ollama-think") as server:
        for key, value in {"LLM_URL": server.base_url, "LLM_MODEL": "qwen3:8b",
                           "CHRONICLE_LLM_BACKOFF_BASE_S": "0.01"}.items():
            monkeypatch.setenv(key, value)
        answers: list[str] = []

        def responder(request: dict) -> str:
            answers.append(answer + safety_sentence(request))
            return answers[-1]

        server.responder = responder
        rows = backfill_weeks(project_id="XH201", start_week="2025-W30", end_week="2025-W31")
    assert {r.outcome for r in rows} == {"generated"}
    # <think> + answer is over the 500-character limit, the answer alone is not: no `shorten` round trip.
    assert dict(db_rows("SELECT purpose, count(*) FROM llm_calls GROUP BY 1")) == {"weekly_report": 2}
    stored = db_rows("SELECT summary, needs_review FROM weekly_reports")
    assert sorted(stored) == sorted((a.strip(), False) for a in answers)  # the weeks may be asked in any order
    text = "\n".join(repr(r) for t in ("weekly_reports", "weekly_report_versions", "llm_calls")
                     for r in db_rows(f"SELECT * FROM {t}"))
    assert MARKER not in text and "<think>" not in text
    [(tokens_out,)] = db_rows("SELECT min(tokens_out) FROM llm_calls")
    assert tokens_out >= len(REASONING) // 4

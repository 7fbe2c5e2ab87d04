"""No reply wedges distillation: a reply the parser cannot take is quarantined and the run goes on."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from chronicle.distill.parse import ReplyError, parse_reply
from chronicle.distill.prompt import REPAIR_SYSTEM
from tests.distill.conftest import OPENCLAW, ingest, use_fake_endpoints
from tests.fakellm import FakeLLMServer

UNTIL = date(2026, 2, 24)
HOSTILE = ["[" * 1000, "[" * 100_000, "{" * 5000, '{"memories": ' + "[" * 3000 + "]" * 3000 + "}",
           "Here: " + "[{" * 2000]


@pytest.mark.parametrize("reply", HOSTILE, ids=["1k-brackets", "100k-brackets", "5k-braces", "deep-valid",
                                                  "prose-then-deep"])
def test_parser_turns_any_hostile_reply_into_a_reply_error(reply: str) -> None:
    with pytest.raises(ReplyError):
        parse_reply(reply)


def test_ordinary_replies_still_parse() -> None:
    assert parse_reply('Sure: [{"content": "a"}] thanks') == [{"content": "a"}]
    assert parse_reply('{"memories": [{"content": "b", "tags": [["x"]]}]}') == [{"content": "b", "tags": [["x"]]}]


def _user(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def wedging(request: dict[str, Any]) -> str:
    """Day 2026-02-15 (and its repair) answers a thousand `[`; every other day answers properly."""
    user = _user(request)
    if request["messages"][0]["content"] == REPAIR_SYSTEM or "Daily notes of 2026-02-15" in user:
        return "[" * 1000
    day = re.search(r"Daily notes of (\S+)", user).group(1)
    return json.dumps([{"content": f"Session of {day} happened.", "summary": "s", "keyInfo": [], "tags": ["t"],
                        "importance": 0.7, "targetFile": "MEMORY.md", "action": "append"}])


def test_a_thousand_brackets_quarantine_one_chunk_and_the_run_goes_on(
    distill_env: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.settings import Settings
    from chronicle.storage.db import connect

    use_fake_endpoints(monkeypatch, fake_llm.base_url)
    fake_llm.responder = wedging
    ingest(OPENCLAW / "memory")

    first = distill_memory(days=30, until=UNTIL).as_dict()
    assert (first["chunks_distilled"], first["chunks_quarantined"], first["chunks_failed"]) == (2, 1, 0)
    second = distill_memory(days=30, until=UNTIL).as_dict()  # the rerun is not wedged either
    assert (second["chunks_cached"], second["chunks_quarantined"]) == (2, 1)
    with connect(Settings()) as conn:
        rows = conn.execute("SELECT chunk_key, reason, length(raw_reply) FROM distill_quarantine").fetchall()
    assert {r[0] for r in rows} == {"2026-02-15#0"}
    assert all(r[1].startswith("invalid_json") and r[2] == 1000 for r in rows)


def test_a_weekly_reply_with_a_wall_of_brackets_keeps_its_report() -> None:
    from chronicle.weekly.engine import llm_week
    from tests.weekly.helpers import ZH_WEEK, week_input

    week = week_input(ZH_WEEK)
    reply = "## 本周要点\n\n- 新入组 2 例 [E2, E3]。\n\n```json\n{\"risks\": " + "[" * 5000 + "}\n```"
    report = llm_week(week, lambda messages, purpose: reply, model="m", max_chars=500, context_tokens=6000)
    assert report.summary.startswith("## 本周要点")
    assert report.llm_stats == {"_rejected": "invalid JSON: nested too deeply"}

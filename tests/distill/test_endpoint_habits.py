"""Real endpoints' habits, through the real `openai` client over HTTP to the local test server:
reasoning (`<think>`, `reasoning_content`) never reaches a report, a memory, an artifact or `llm_calls.response`,
its tokens are still counted; structured output is asked for where the endpoint takes it and the refusal of an
endpoint that does not is detected once and remembered."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from chronicle.distill.prompt import REPAIR_SYSTEM
from tests.distill.conftest import OPENCLAW, ingest, tree_bytes, use_fake_endpoints
from tests.fakellm import FakeLLMServer
from tests.fakellm.replies import REASONING, STYLES

UNTIL = date(2026, 2, 24)
MARKER = "THINKING-MARKER"


@pytest.fixture(autouse=True)
def fresh_capabilities() -> Iterator[None]:
    from chronicle.llm.capabilities import forget_capabilities

    forget_capabilities()
    yield
    forget_capabilities()


def _user(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def one_memory_per_day(request: dict[str, Any]) -> str:
    if request["messages"][0]["content"] == REPAIR_SYSTEM:
        return "[]"
    day = re.search(r"Daily notes of (\S+)", _user(request)).group(1)
    return json.dumps([{"content": f"会话 {day}：发布前必须保持 JWT 认证。", "summary": "JWT 必须开启", "keyInfo": [],
                        "tags": ["发布"], "importance": 0.8, "targetFile": "MEMORY.md", "action": "append"}],
                      ensure_ascii=False)


def test_client_strips_reasoning_and_counts_its_tokens() -> None:
    from chronicle.llm import ChatClient, ListLogger
    from chronicle.settings import Settings

    for style in ("vllm", "ollama-think", "deepseek"):
        with FakeLLMServer(style=style) as server:
            server.responder = lambda request: "## 周报\n\n- 入组 2 例。"
            logger = ListLogger()
            client = ChatClient(Settings(llm_url=server.base_url, llm_model="m"), logger)
            result = client.complete([{"role": "user", "content": "hi"}], purpose="weekly_report")
        assert result.text == "## 周报\n\n- 入组 2 例。", style
        [record] = logger.records
        assert record.response == result.text and MARKER not in record.response
        assert record.tokens_out >= len(REASONING) // 4  # the thinking was paid for, and is counted


@pytest.mark.parametrize("style", STYLES)
def test_distillation_on_every_reply_shape(distill_env: Path, monkeypatch: pytest.MonkeyPatch, style: str) -> None:
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.settings import Settings
    from chronicle.storage.db import connect
    from chronicle.storage.memory.store import MemoryStore

    with FakeLLMServer(style=style) as server:
        use_fake_endpoints(monkeypatch, server.base_url)
        server.responder = one_memory_per_day
        ingest(OPENCLAW / "memory")
        summary = distill_memory(days=30, until=UNTIL).as_dict()
        chats = [r.json for r in server.requests if r.path.endswith("/chat/completions")]
    settings = Settings()

    assert (summary["chunks_distilled"], summary["chunks_quarantined"], summary["events"]["ADD"]) == (3, 0, 3)
    contents = sorted(m.content for m in MemoryStore(settings).list(limit=10))
    assert contents == [f"会话 {d}：发布前必须保持 JWT 认证。" for d in ("2026-02-14", "2026-02-15", "2026-02-24")]
    with connect(settings) as conn:
        responses = conn.execute("SELECT response, tokens_out, status FROM llm_calls").fetchall()
    structured = [c for c in chats if (c.get("response_format") or {}).get("type") == "json_schema"]
    if style == "deepseek":
        # Refused once (HTTP 400, recorded as an error attempt), remembered: every later call is plain text.
        assert len(structured) == 1 and chats[0] is structured[0] and len(chats) == 4
        assert sorted(r[2] for r in responses) == ["error", "ok", "ok", "ok"]
    else:
        assert len(structured) == len(chats) == 3  # asked for schema-bound JSON every time
        assert structured[0]["response_format"]["json_schema"]["name"] == "memories"
    for response, tokens_out, status in responses:
        assert response is None or MARKER not in response
        if status == "ok" and style in ("vllm", "ollama-think", "deepseek"):
            assert tokens_out >= len(REASONING) // 4
    for where, blob in {"LanceDB": tree_bytes(Path(settings.lance_uri)),
                        "knowledge files": tree_bytes(settings.workspace_dir)}.items():
        assert MARKER.encode() not in blob and b"<think>" not in blob, where

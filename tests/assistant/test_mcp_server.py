"""`chronicle mcp` through the official MCP client, over stdio and over streamable HTTP, in real child processes
against a real home (DuckDB file, LanceDB folder): the tool list, searches with filters, a proposal that stays a
proposal, refusals, and redaction of everything an assistant receives."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
TOOLS = {"search_memories", "list_memories", "memory_tags", "chronicle_context", "weekly_report", "propose_memory",
         "request_forget"}
CODE = "PRJ-CANARY-7788"  # stored before the pattern that hides it was configured: the output gate must catch it
KEY = "sk-CANARYmcp0123456789abcdefXYZ"
LAUNCH = "from chronicle.cli.main import app; app()"


@pytest.fixture
def served_home(home: Path, settings) -> Path:
    """Memories of two people in a real store, and the DuckDB file (migrated) for proposals."""
    from chronicle.memory.model import Memory
    from chronicle.redaction.memories import redact_memory
    from chronicle.redaction.redactor import Redactor
    from chronicle.storage.db import connect
    from chronicle.storage.memory.store import MemoryStore

    def mem(text: str, subject: str, tags: list[str], importance: float, target: str = "USER.md") -> Memory:
        return redact_memory(Memory(content=text, summary=text[:40], tags=tags, importance=importance,
                                    target_file=target, subject=subject), Redactor.build())

    MemoryStore(settings).upsert([
        mem("张曼婷每天晚上十一点睡觉，早上六点半起床", "张曼婷", ["作息"], 0.8),
        mem("王峰周末去西湖边跑步，一般跑十公里", "王峰", ["运动"], 0.6),
        mem(f"The staging deploy uses project code {CODE}", "", ["tools"], 0.9, "TOOLS.md"),
    ], created=datetime(2026, 3, 2, tzinfo=UTC))
    with connect(settings):
        pass
    return home


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONICLE_")}
    env.update(CHRONICLE_HOME=str(home), PYTHONPATH=str(REPO), CHRONICLE_WARM="0",
               CHRONICLE_REDACT_EXTRA_PATTERNS='["PRJ-CANARY-\\\\d+"]')
    return env


def _data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


def _text(result) -> str:
    return json.dumps(result.structured_content, ensure_ascii=False) + "".join(
        getattr(c, "text", "") for c in result.content)


async def _session_checks(client: Client, settings) -> None:
    tools = await client.list_tools()
    assert {t.name for t in tools.tools} == TOOLS
    assert [t.name for t in tools.tools if not t.annotations.read_only_hint] == ["propose_memory", "request_forget"]

    found = _data(await client.call_tool("search_memories", {"query": f"几点睡觉 {KEY}", "about": "张曼婷"}))
    assert found["hits"] and {h["subject"] for h in found["hits"]} == {"张曼婷"}
    assert KEY not in json.dumps(found) and "[REDACTED:api_key]" in found["query"]  # the query echo is gated too
    scoped = _data(await client.call_tool("search_memories", {"query": "跑步", "tags": ["运动"],
                                                              "min_importance": 0.5, "as_of": "2026-03-03"}))
    assert [h["subject"] for h in scoped["hits"]] == ["王峰"]
    # A memory with no secret reaches the assistant without a redaction mark: no field the gate mistakes for a key
    # (a content hash is 64 hex digits) shows up as noise in every hit.
    assert "[REDACTED" not in json.dumps(scoped["hits"], ensure_ascii=False), scoped["hits"]
    tools_md = _data(await client.call_tool("search_memories", {"query": "staging deploy", "file": "TOOLS.md"}))
    assert tools_md["hits"] and CODE not in _text(await client.call_tool("list_memories", {}))
    assert "[REDACTED:custom]" in tools_md["hits"][0]["content"]
    assert _data(await client.call_tool("memory_tags", {}))["tags"] == {"作息": 1, "运动": 1, "tools": 1}
    assert _data(await client.call_tool("chronicle_context", {"project": "p1"}))["project"] == "p1"
    missing = await client.call_tool("weekly_report", {"project": "p1", "week": "2026-W09"})
    assert missing.is_error and "no report" in _text(missing)

    # The one write: a pending proposal, nothing else (no knowledge file, no memory).
    before = sorted(p.name for p in settings.workspace_dir.glob("*")) if settings.workspace_dir.exists() else []
    made = _data(await client.call_tool("propose_memory", {
        "content": f"王峰改在钱塘江边跑步，token {KEY}", "target_file": "USER.md", "reason": "he told me"}))
    assert made["status"] == "pending" and KEY not in json.dumps(made)
    again = _data(await client.call_tool("propose_memory", {
        "content": f"王峰改在钱塘江边跑步，token {KEY}", "target_file": "USER.md"}))
    assert again["proposal_id"] == made["proposal_id"] and not again["new"]
    # Forgetting on request: a pending request, nothing forgotten until a person approves it (_check_store).
    forget = _data(await client.call_tool("request_forget", {"about": "王峰", "reason": f"he asked; {KEY}"}))
    assert forget["status"] == "pending" and forget["memories_named_now"] == 1
    assert forget["request_id"] in forget["next"]
    nothing = await client.call_tool("request_forget", {"match": "从未提过的事", "reason": "x"})
    assert nothing.is_error and "nothing to forget" in _text(nothing)
    after = sorted(p.name for p in settings.workspace_dir.glob("*")) if settings.workspace_dir.exists() else []
    assert after == before

    # Refusals: a path out of the allowlist, text past its bound (named, not repeated), and tools that would write
    # do not exist.
    escape = await client.call_tool("propose_memory", {"content": "x", "target_file": "../../etc/passwd"})
    assert escape.is_error and "target_file must be one of" in _text(escape)
    for tool, args in (("search_memories", {"query": f"{KEY} " + "几点睡觉" * 600}),
                       ("propose_memory", {"content": f"{KEY} " + "跑步" * 3000, "target_file": "USER.md"})):
        long = await client.call_tool(tool, args)
        assert long.is_error and "at most" in _text(long) and KEY not in _text(long), _text(long)
    try:
        unknown = await client.call_tool("approve_proposal", {"proposal_id": made["proposal_id"]})
    except MCPError as exc:  # a protocol error or a tool error: either way nothing was approved
        assert "approve_proposal" in str(exc)
    else:
        assert unknown.is_error


def _check_store(settings, proposal_count: int = 1) -> None:
    from chronicle.storage.db import connect
    from chronicle.storage.memory.store import MemoryStore

    assert MemoryStore(settings).count() == 3
    with connect(settings, read_only=True) as conn:
        rows = conn.execute("SELECT status, content, reason FROM memory_proposals").fetchall()
    assert len(rows) == proposal_count and rows[0][0] == "pending"
    assert KEY not in repr(rows) and "[REDACTED:api_key]" in rows[0][1]
    with connect(settings, read_only=True) as conn:
        asked = conn.execute("SELECT status, about, reason FROM memory_forget_requests").fetchall()
    assert [(status, about) for status, about, _ in asked] == [("pending", "王峰")] and KEY not in repr(asked)


def test_mcp_over_stdio(served_home: Path, settings) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-c", LAUNCH, "mcp"], env=_env(served_home),
                                   cwd=str(served_home.parent))

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _session_checks(client, settings)

    anyio.run(main)
    _check_store(settings)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_mcp_over_streamable_http_on_loopback(served_home: Path, settings, tmp_path: Path) -> None:
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH, "mcp", "--http", "--port", str(port)],
                            env=_env(served_home), cwd=served_home.parent, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for_port(port, proc)

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
                await _session_checks(client, settings)

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()
    _check_store(settings)


def _wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 180.0) -> None:
    """Until the server accepts connections (or its process ended): the event, not a fixed sleep."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the MCP server exited before listening"
        with socket.socket() as s:
            s.settimeout(1.0)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listened on port {port} within {timeout} s")


def test_http_refuses_a_non_loopback_host(served_home: Path) -> None:
    from typer.testing import CliRunner

    from chronicle.cli.main import app

    out = CliRunner().invoke(app, ["mcp", "--http", "--host", "0.0.0.0"])
    assert out.exit_code == 2 and "loopback" in out.output

"""The LLM engine against the local OpenAI-compatible server: reply recovery, repair, quarantine, validation,
overwrite rules, caching and leak checks."""

from __future__ import annotations

import json
import logging
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from chronicle.distill.prompt import BEGIN, END, REPAIR_SYSTEM
from tests.distill.conftest import (
    artifact_markdowns,
    assert_no_canary,
    ingest,
    ledger_text,
    snapshot,
    tree_bytes,
    use_fake_endpoints,
)
from tests.fakellm import FakeLLMServer

UNTIL = date(2026, 2, 24)
HUMAN_SOUL = "# SOUL\n\nWritten by a human: calm, precise, never sarcastic.\n"
HUMAN_USER = "# USER\r\n\r\nHand-written profile, CRLF line endings.\r\n"
OLD_SECTION = ("<!-- chronicle:begin 2026-01-01 source=2026-01-01.md -->\n"
               "## 🧠 Distilled 2026-01-01 (from 2026-01-01.md)\n\n"
               "- an older distilled line <!-- chronicle:mem id=2026-01-01-aaaa hash=aaaaaaaaaaaaaaaa -->\n"
               "<!-- chronicle:end -->\n")


def _mem(content: str, target: str, **extra: Any) -> dict[str, Any]:
    return {"content": content, "summary": content.split(".")[0], "keyInfo": ["k"], "tags": ["t"],
            "importance": 0.8, "targetFile": target, "action": "append", **extra}


def _user_text(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def scripted(request: dict[str, Any]) -> str:
    """Per-day replies covering every reply shape the parser must handle."""
    user = _user_text(request)
    if request["messages"][0]["content"] == REPAIR_SYSTEM:
        if "REPAIRABLE" not in user:
            return "still {not json"
        return json.dumps([
            _mem("Releases must keep JWT authentication mandatory.", "MEMORY.md"),
            _mem("escape attempt", "../x"), _mem("system file", "/etc/passwd"), _mem("nested", "memory/USER.md"),
            _mem("The user wants release notes in the README.", "USER.md", action="overwrite"),
        ])
    day = re.search(r"Daily notes of (\d{4}-\d{2}-\d{2})", user).group(1)
    if day == "2026-02-14":
        body = json.dumps([
            _mem("Speak calmly and keep answers short.", "SOUL.md", action="overwrite"),
            _mem("Ports: 8765 prod, 8766 mock.", "TOOLS.md", importance=7),
        ])
        return f"```json\n{body}\n```"
    if day == "2026-02-15":
        return '[{"content": "REPAIRABLE broken", "targetFile": "MEMORY.md",]'
    if day == "2026-02-16":
        first_entry = re.search(r"\[1\] (.*)", user).group(1)  # echo the (redacted) note back
        body = json.dumps([_mem(first_entry, "TOOLS.md"), _mem("Drafts go to 王老师 before any e-mail is sent.",
                                                                   "AGENTS.md")], ensure_ascii=False)
        return f"Sure! Here are the memories I found:\n{body}\nLet me know if you need more."
    return "I could not produce JSON for this one, sorry."


@pytest.fixture
def llm_env(distill_env: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:

    use_fake_endpoints(monkeypatch, fake_llm.base_url)
    return fake_llm


def test_llm_replies_validated_repaired_quarantined_and_leak_free(
    llm_env: FakeLLMServer, notes_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.settings import Settings
    from chronicle.storage.db import connect
    from chronicle.storage.memory.store import MemoryStore

    settings = Settings()
    ws = settings.workspace_dir
    ws.mkdir(parents=True)
    (ws / "SOUL.md").write_text(HUMAN_SOUL + "\n" + OLD_SECTION, encoding="utf-8")
    (ws / "USER.md").write_bytes((HUMAN_USER + "\r\n" + OLD_SECTION.replace("\n", "\r\n")).encode())
    llm_env.responder = scripted
    logging.getLogger("prefect").addHandler(caplog.handler)
    try:
        ingest(notes_dir)
        summary = distill_memory(days=11, until=UNTIL)
    finally:
        logging.getLogger("prefect").removeHandler(caplog.handler)

    assert (summary.tally.chunks, summary.tally.distilled, summary.tally.quarantined) == (4, 3, 1)
    assert summary.tally.llm_calls == 6  # 4 distill + 2 repair
    assert summary.tally.rejected == {"bad_target_file": 3}
    assert summary.tally.warnings["importance_clamped"] == 1 and "overwrite_downgraded" not in summary.tally.warnings
    # SOUL.md's memory and AGENTS.md's (protected: it instructs the assistant) are proposals.
    assert summary.tally.proposals == 2 and summary.tally.suspected_injection == 0
    assert summary.tally.events["ADD"] == 6 and summary.tally.events["REJECT"] == 3

    # SOUL.md is protected: never changed by a run (its memory is stored and proposed for approval).
    assert (ws / "SOUL.md").read_text(encoding="utf-8") == HUMAN_SOUL + "\n" + OLD_SECTION
    # USER.md may: the managed section is replaced, the human CRLF text kept byte for byte.
    user = (ws / "USER.md").read_bytes()
    assert user.startswith(HUMAN_USER.encode()) and b"older distilled line" not in user
    assert b"The user wants release notes in the README." in user and b"<!-- chronicle:end -->\r\n" in user
    assert b"\n" not in user.replace(b"\r\n", b"")  # the file's CRLF style is kept for our lines too
    assert {p.name.split(".md.")[0] for p in (ws / ".backups").iterdir()} == {"USER"}
    # Bad targetFiles wrote nothing anywhere.
    assert not (ws.parent / "x").exists() and not (ws / "memory").exists()
    assert {p.name for p in ws.glob("*") if p.is_file()} <= {"SOUL.md", "USER.md", "TOOLS.md", "MEMORY.md",
                                                            "AGENTS.md", ".chronicle-knowledge.lock"}

    # Importance 7 was clamped to 1.0; the echoed note text arrived redacted.
    stored = {m.content: m for m in MemoryStore(settings).list(limit=100)}
    assert stored["Ports: 8765 prod, 8766 mock."].importance == 1.0
    assert any("[REDACTED:api_key]" in c for c in stored)

    with connect(settings) as conn:
        quarantined = conn.execute(
            "SELECT chunk_key, reason, raw_reply, repair_reply FROM distill_quarantine").fetchall()
        purposes = dict(conn.execute("SELECT purpose, count(*) FROM llm_calls GROUP BY 1").fetchall())
        rejects = conn.execute("SELECT target_file FROM memory_events WHERE event = 'REJECT' ORDER BY 1").fetchall()
    assert quarantined == [("2026-02-24#0", quarantined[0][1], "I could not produce JSON for this one, sorry.",
                            "still {not json")]
    assert quarantined[0][1].startswith("invalid_json")
    assert purposes == {"distill": 4, "repair": 2}
    assert [r[0] for r in rejects] == ["../x", "/etc/passwd", "memory/USER.md"]

    # Prompt-injection defence: the note's instruction sits inside the DATA delimiters.
    chats = [r.json for r in llm_env.requests if r.path.endswith("/chat/completions")]
    day16 = next(_user_text(c) for c in chats if "Daily notes of 2026-02-16" in _user_text(c))
    inside = day16.split(BEGIN, 1)[1].split(END, 1)[0]
    assert "Ignore all previous instructions" in inside
    assert "DATA" in chats[0]["messages"][0]["content"]

    for request in llm_env.requests:
        assert_no_canary(request.body, f"request to {request.path}")
    assert_no_canary(ledger_text(settings), "DuckDB ledgers")
    assert_no_canary(tree_bytes(Path(settings.lance_uri)), "LanceDB")
    assert_no_canary(tree_bytes(ws), "knowledge files")
    markdowns = artifact_markdowns()
    assert any("| REJECT | 3 |" in m for m in markdowns)
    for markdown in markdowns:
        assert_no_canary(markdown, "Prefect artifact")
    messages = "\n".join(r.getMessage() for r in caplog.records)
    assert "bad_target_file" in messages and "quarantined" in messages and "importance_clamped" in messages
    assert_no_canary(messages, "logs")

    # Rerun: only the quarantined chunk is asked again; store, files and backups stay exactly as they were.
    before_files, before_rows, before_calls = snapshot(ws), MemoryStore(settings).count(), llm_env.calls()
    again = distill_memory(days=11, until=UNTIL)
    new_chats = [r.json for r in llm_env.requests if r.path.endswith("/chat/completions")][len(chats):]
    assert again.tally.cached == 3 and llm_env.calls() - before_calls == 2
    assert all("2026-02-24" in _user_text(c) or "I could not produce" in _user_text(c) for c in new_chats)
    assert snapshot(ws) == before_files and MemoryStore(settings).count() == before_rows


def test_openclaw_notes_via_llm_twice_makes_no_second_call(llm_env: FakeLLMServer, tmp_path: Path) -> None:
    from chronicle.flows.distill_memory import distill_memory
    from chronicle.settings import Settings
    from chronicle.storage.memory.store import MemoryStore
    from tests.distill.conftest import OPENCLAW

    def one_per_day(request: dict[str, Any]) -> str:
        day = re.search(r"Daily notes of (\S+)", _user_text(request)).group(1)
        return json.dumps([_mem(f"Session of {day}: security-first releases of Agent ROS Bridge.", "MEMORY.md")])

    llm_env.responder = one_per_day
    settings = Settings()
    ingest(OPENCLAW / "memory")
    first = distill_memory(days=30, until=UNTIL)
    files, rows, calls = snapshot(settings.workspace_dir), MemoryStore(settings).count(), llm_env.calls()
    second = distill_memory(days=30, until=UNTIL)

    assert first.tally.distilled == 3 and first.tally.events["ADD"] == 3 and calls == 3
    assert second.tally.llm_calls == 0 and llm_env.calls() == calls
    assert MemoryStore(settings).count() == rows == 3
    assert snapshot(settings.workspace_dir) == files

"""Chronicle's MCP server (the official `mcp` SDK's `MCPServer`): read tools over the memory and the chronicle, and
two tools that only file something pending for a human: a memory to add, memories to forget.

Every tool's answer passes the redaction gate (`services.assistant.redacted_tree`: each string, keys included) on
its way out, error messages too — whatever the store or a report holds, an assistant never receives a secret the
redactor knows. No tool writes a knowledge file, the memory store or a report: `propose_memory` records a proposal a
human decides with `chronicle memory approve|reject`; `request_forget` likewise records a forget request.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import date
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from chronicle.redaction.configured import redactor_for
from chronicle.redaction.redactor import Redactor
from chronicle.services import assistant
from chronicle.services.assistant import ProposalRefused, propose, redacted_tree
from chronicle.settings import Settings

INSTRUCTIONS = (
    "Chronicle keeps a distilled memory of daily notes and a weekly chronicle of project logs. Search the memory "
    "(about a person, as of a day, by tag or importance), list it, read a project's chronicle context or one week's "
    "report. To remember something, call propose_memory: it files a proposal a human approves; nothing you send "
    "is written to a knowledge file or the memory directly. When the user asks you to forget something, call "
    "request_forget: a human approves it, then it is gone from the memory and the knowledge files. Secrets in "
    "answers are shown as [REDACTED:kind]."
)
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
PROPOSE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# Bookkeeping an assistant has no use for. The content hashes also read as keys to the output gate (64 hex digits)
# and would come back as a redaction mark in every hit: a memory is named by its `id`.
_HIDDEN = {"fts_text", "content_hash", "merged_hashes", "absorbed", "source_entry_ids", "flow_run_id", "key_info"}


def _day(value: str | None, name: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ToolError(f"{name} must be YYYY-MM-DD") from None


def _rows(items: list[Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in asdict(i).items() if k not in _HIDDEN} for i in items]


def build_server(settings: Settings) -> MCPServer:
    """The server with its tools, bound to one home's settings."""
    server = MCPServer(name="chronicle", instructions=INSTRUCTIONS)
    redactor = redactor_for(settings)
    # In this order: clients list the tools (and SKILL.md shows them) in the order they were added.
    _add_memory_tools(server, settings, redactor)
    _add_chronicle_tools(server, settings, redactor)
    _add_propose_tool(server, settings, redactor)
    return server


def _out(value: Any, redactor: Redactor) -> dict[str, Any]:
    # JSON first (dates, numpy floats), then every string through the gate.
    return redacted_tree(json.loads(json.dumps(value, default=str, ensure_ascii=False)), redactor)


def _refusal(exc: Exception, redactor: Redactor) -> ToolError:
    return ToolError(str(redactor.redact(str(exc))))


def _add_memory_tools(server: MCPServer, settings: Settings, redactor: Redactor) -> None:
    @server.tool(annotations=READ)
    def search_memories(query: str, tags: list[str] | None = None, min_importance: float | None = None,
                        file: str | None = None, about: str | None = None, as_of: str | None = None,
                        limit: int = 10) -> dict[str, Any]:
        """Search the distilled memory (semantic + full text). tags: any of; min_importance 0..1; file: a knowledge
        file such as USER.md; about: only memories about this person; as_of: YYYY-MM-DD, what was current then."""
        from chronicle.param_checks import ActionNeeded, ParameterError
        from chronicle.services.memory import search_memories as search

        try:
            hits = search(settings, query, tags=tags or None, min_importance=min_importance, target_file=file,
                          limit=max(1, min(limit, 100)), about=about, as_of=_day(as_of, "as_of"))
        except (ActionNeeded, ParameterError) as exc:
            raise _refusal(exc, redactor) from None
        return _out({"query": query, "hits": _rows(hits)}, redactor)

    @server.tool(annotations=READ)
    def list_memories(limit: int = 50, tags: list[str] | None = None, file: str | None = None) -> dict[str, Any]:
        """Memories, newest first (optionally only some tags, or one knowledge file)."""
        from chronicle.services.memory import list_memories as newest

        memories = newest(settings, limit=max(1, min(limit, 500)), tags=tags or None, target_file=file)
        return _out({"memories": _rows(memories)}, redactor)

    @server.tool(annotations=READ)
    def memory_tags() -> dict[str, Any]:
        """Tags with the number of memories carrying each."""
        from chronicle.services.memory import tag_counts

        return _out({"tags": tag_counts(settings)}, redactor)


def _add_chronicle_tools(server: MCPServer, settings: Settings, redactor: Redactor) -> None:
    @server.tool(annotations=READ)
    def chronicle_context(project: str) -> dict[str, Any]:
        """The project's chronicle as context: one line per week, oldest first (`=== 项目编年史 ===` block)."""
        from chronicle.services.history import build_history_context

        return _out({"project": project, "context": build_history_context(settings, project)}, redactor)

    @server.tool(annotations=READ)
    def weekly_report(project: str, week: str) -> dict[str, Any]:
        """One week's report of a project; week as an ISO week, e.g. 2026-W05."""
        from chronicle.param_checks import ParameterError, parse_week
        from chronicle.storage.db import read
        from chronicle.storage.reports import get_report

        try:
            iso = parse_week(week, "week")
        except ParameterError as exc:
            raise _refusal(exc, redactor) from None
        row = read(settings, get_report, project, iso.number) if iso else None
        if row is None:
            raise ToolError(f"no report for {project} {week}")
        keep = ("project_id", "start_date", "end_date", "status", "summary", "stats", "needs_review", "stale",
                "version", "model", "updated_at")
        return _out({"week": str(iso), **{k: row.get(k) for k in keep}}, redactor)


def _add_propose_tool(server: MCPServer, settings: Settings, redactor: Redactor) -> None:
    @server.tool(annotations=PROPOSE)
    def propose_memory(content: str, target_file: str = "MEMORY.md", reason: str = "", importance: float = 0.5,
                       tags: list[str] | None = None) -> dict[str, Any]:
        """Propose a memory for a knowledge file. It is only filed as a PENDING proposal: a human approves it
        (`chronicle memory approve ID`) or rejects it; nothing is written to a knowledge file or the memory now."""
        from chronicle.param_checks import ParameterError

        try:
            done = propose(settings, content, target_file, reason=reason, importance=importance, tags=tags)
        except (ProposalRefused, ParameterError) as exc:
            raise _refusal(exc, redactor) from None
        p = done.proposal
        return _out({"proposal_id": p.proposal_id, "status": p.status,
                     "new": done.new, "target_file": p.target_file, "content": p.content,
                     "suspected_injection": p.suspected_injection,
                     "next": f"a human decides: chronicle memory approve {p.proposal_id} | reject {p.proposal_id}"},
                    redactor)

    @server.tool(annotations=PROPOSE)
    def request_forget(reason: str, memory_id: str | None = None, about: str | None = None,
                       match: str | None = None) -> dict[str, Any]:
        """Ask for memories to be forgotten (the user asked you to): one memory by id, everything about a person
        (about), or memories containing a text (match); about and match combine. It is only filed as a PENDING
        request: nothing is forgotten until a human approves it (`chronicle memory approve ID`)."""
        from chronicle.param_checks import ParameterError

        try:
            done = assistant.request_forget(settings, memory_id=memory_id, about=about, match=match, reason=reason)
        except (ProposalRefused, ParameterError) as exc:
            raise _refusal(exc, redactor) from None
        r = done.request
        return _out({"request_id": r.request_id, "status": r.status, "new": done.new,
                     "memories_named_now": done.would_take,
                     "next": f"a human decides: chronicle memory approve {r.request_id} | reject {r.request_id}"},
                    redactor)

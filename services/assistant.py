"""What an assistant may do through Chronicle's MCP server besides reading: propose a memory, or ask for memories to
be forgotten — a pending proposal or forget request a human approves or rejects (`chronicle memory approve|reject`).
Nothing an assistant sends writes a knowledge file or the memory store. And what it receives: every string
redacted (`redacted_tree`), whatever tool built it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chronicle.distill.injection import looks_like_injection, matched_phrase
from chronicle.distill.proposals import ForgetRequest, Proposal, make_proposal
from chronicle.memory.model import MAX_CONTENT, Memory
from chronicle.param_checks import check_size
from chronicle.redaction.configured import redactor_for
from chronicle.redaction.redactor import Redactor
from chronicle.settings import KNOWLEDGE_FILES, Settings
from chronicle.storage import proposals as sql
from chronicle.storage.db import read, write

ASSISTANT_SOURCE = "assistant (MCP)"
# What one proposal may hold, its content at most MAX_CONTENT as any memory's. Longer text is refused with the rule it
# broke (a ParameterError), before the redactor reads it or a row stores it: an assistant can send it again shorter,
# where a note's long line is cut.
MAX_REASON_CHARS = 1_000
MAX_TAGS = 20
MAX_TAG_CHARS = 64


class ProposalRefused(ValueError):
    """A proposal an assistant may not make (unknown file, empty text); the message says which rule."""


@dataclass(frozen=True)
class Proposed:
    proposal: Proposal
    new: bool
    """False when the same text for the same file was proposed before (its status stands: a rejected text stays
    rejected)."""


def propose(settings: Settings, content: str, target_file: str, *, reason: str = "", importance: float = 0.5,
            tags: list[str] | None = None, action: str = "append") -> Proposed:
    """A pending proposal from an assistant: redacted, screened for orders to the model, never written anywhere but
    `memory_proposals`."""
    if target_file not in KNOWLEDGE_FILES:
        raise ProposalRefused(f"target_file must be one of {', '.join(KNOWLEDGE_FILES)}")
    if action not in ("append", "overwrite"):
        raise ProposalRefused("action must be append or overwrite")
    text = " ".join(content.split())
    if not text:
        raise ProposalRefused("content is empty")
    check_size("content", len(text), MAX_CONTENT)
    check_size("reason", len(reason), MAX_REASON_CHARS)
    check_size("tags", len(tags or []), MAX_TAGS, "tags")
    check_size("a tag", max(map(len, tags or []), default=0), MAX_TAG_CHARS)
    redactor = redactor_for(settings)
    memory = Memory(content=redactor.redact(text), summary=redactor.redact(text[:120]), target_file=target_file,
                    importance=min(1.0, max(0.0, float(importance))), tags=[redactor.redact(t) for t in tags or []],
                    action=action, source=ASSISTANT_SOURCE)
    suspect = looks_like_injection(memory.content)
    why = redactor.redact(" ".join(reason.split())) or "no reason given"
    today = datetime.now(settings.tz_for(settings.ingest.notes_project)).date()
    proposal = make_proposal(
        memory, day=today, source=ASSISTANT_SOURCE, memory_id=None, flow_run_id=None, suspected_injection=suspect,
        reason=f"proposed by an assistant over MCP: {why}" + (
            f"; suspected injection: {matched_phrase(memory.content)}" if suspect else ""),
    )
    new = write(settings, lambda conn: sql.record_proposals(conn, [proposal]))
    # Proposed before: the stored row and its status (a rejected text stays rejected).
    stored = proposal if new else read(settings, sql.find_proposal, proposal.proposal_id)[0]
    return Proposed(stored, bool(new))


@dataclass(frozen=True)
class ForgetRequested:
    request: ForgetRequest
    new: bool
    """False when the same selector was asked for before (its status stands)."""
    would_take: int
    """How many memories the selector names now (an approval forgets what it names then)."""


def request_forget(settings: Settings, *, memory_id: str | None = None, about: str | None = None,
                   match: str | None = None, reason: str = "") -> ForgetRequested:
    """A pending forget request from an assistant (a user asked it to forget something): redacted, never carried
    out until a person approves it. A selector that names no memory now is refused, so the assistant can say so."""
    from chronicle.services.forget import Selector, SelectorError, forget

    for name, value, most in (("memory_id", memory_id, 64), ("about", about, 200), ("match", match, 500),
                              ("reason", reason, MAX_REASON_CHARS)):
        check_size(name, len(value or ""), most)
    redact = redactor_for(settings).redact
    fields = [str(redact(" ".join(v.split()))) if v and v.strip() else None for v in (memory_id, about, match)]
    if not any(fields):
        raise ProposalRefused("say what to forget: memory_id, about (a person) or match (a text)")
    selector = Selector(*fields)
    try:
        named = forget(settings, selector, reason="a forget request's dry run", dry_run=True).memories
    except SelectorError as exc:
        raise ProposalRefused(str(exc)) from None
    if not named:
        raise ProposalRefused(f"no memory matches {selector.describe()}: nothing to forget")
    why = redact(" ".join(reason.split())) or "no reason given"
    request = ForgetRequest(ForgetRequest.id_for(*fields), *fields, reason=str(why), source=ASSISTANT_SOURCE)
    new = write(settings, lambda conn: sql.record_forget_request(conn, request))
    stored = read(settings, sql.forget_requests, None, request.request_id)[0]
    return ForgetRequested(stored, bool(new), len(named))


def redacted_tree(value: Any, redactor: Redactor) -> Any:
    """`value` (JSON-like: dicts, lists, scalars) with every string redacted, keys included."""
    if isinstance(value, str):
        return str(redactor.redact(value))
    if isinstance(value, Mapping):
        return {redacted_tree(str(k), redactor): redacted_tree(v, redactor) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [redacted_tree(v, redactor) for v in value]
    return value

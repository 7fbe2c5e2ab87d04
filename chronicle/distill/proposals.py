"""Proposals: memories a distillation may not write by itself, waiting for a human (pure).

Two kinds land here instead of in a knowledge file:
- a memory aimed at a protected file (`protected_files`: SOUL.md, IDENTITY.md and AGENTS.md by default), which an
  agent loads as its persona or its rules — a run never changes those files, not even by appending, whatever
  the injection screen says;
- a memory that reads as an instruction to the model (`suspected_injection`), whatever its target.

A proposal's id is derived from its target file and content, so a rerun (or a later note saying the same)
finds the proposal it made before instead of adding another, and a rejected text stays rejected. A forget request
(an assistant's, over MCP) waits for a person the same way.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from chronicle.distill.sections import Item
from chronicle.markup import inert
from chronicle.memory.model import Memory

Status = Literal["pending", "approved", "rejected"]


def proposal_id(target_file: str, content_hash: str) -> str:
    return "p-" + hashlib.sha256(f"{target_file}\n{content_hash}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Proposal:
    """One row of `memory_proposals`."""

    proposal_id: str
    target_file: str
    action: str
    content: str
    content_hash: str
    importance: float
    tags: list[str]
    note_date: date
    source: str
    source_entry_ids: list[str]
    memory_id: str | None
    reason: str
    suspected_injection: bool
    flow_run_id: str | None
    status: Status = "pending"
    created_at: datetime | None = None
    decided_at: datetime | None = None
    decided_by: str | None = None


@dataclass(frozen=True)
class ForgetRequest:
    """One row of `memory_forget_requests`: what an assistant asked to forget, waiting for a person. Its id is derived
    from the selector, so the same request filed twice is one request (and a rejected one stays rejected)."""

    request_id: str
    memory_id: str | None
    about: str | None
    match: str | None
    reason: str
    source: str
    status: Status = "pending"
    created_at: datetime | None = None
    decided_at: datetime | None = None
    decided_by: str | None = None
    change_id: str | None = None

    @staticmethod
    def id_for(memory_id: str | None, about: str | None, match: str | None) -> str:
        key = "\n".join(v or "" for v in (memory_id, about, match))
        return "f-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def make_proposal(memory: Memory, *, day: date, source: str, memory_id: str | None, reason: str,
                  suspected_injection: bool, flow_run_id: str | None) -> Proposal:
    return Proposal(
        proposal_id=proposal_id(memory.target_file, memory.content_hash), target_file=memory.target_file,
        action=memory.action, content=memory.content, content_hash=memory.content_hash,
        importance=float(memory.importance), tags=list(memory.tags), note_date=day, source=memory.source or source,
        source_entry_ids=list(memory.source_entry_ids), memory_id=memory_id, reason=reason,
        suspected_injection=suspected_injection, flow_run_id=flow_run_id,
    )


def approved_item(proposal: Proposal, action: str) -> Item:
    """The knowledge-file item an approval writes (same managed section as the run would have used)."""
    return Item(memory_id=proposal.memory_id or proposal.proposal_id, content_hash=proposal.content_hash,
                text=proposal.content, day=proposal.note_date.isoformat(), source=proposal.source,
                action=action, importance=proposal.importance)  # type: ignore[arg-type]


def _cell(text: str, limit: int = 300) -> str:
    """Text fit for one Markdown table cell: one line, pipes escaped, inert (`markup.inert`: no HTML or comment
    marker, no image, link or URL a browser would act on)."""
    one = inert(" ".join(text.split())).replace("|", "\\|")
    return one if len(one) <= limit else one[: limit - 1] + "…"


def proposals_markdown(proposals: list[Proposal], *, pending_total: int, title: str) -> str:
    """The run's proposals artifact: what waits for a human, and how to decide."""
    flagged = sum(p.suspected_injection for p in proposals)
    head = (f"# {title}\n\n{len(proposals)} proposal(s) from this run ({flagged} suspected injection); "
            f"{pending_total} pending in total.\n\n"
            "Approve with `chronicle memory approve ID`, drop with `chronicle memory reject ID`.\n\n")
    if not proposals:
        return head
    rows = "\n".join(
        f"| `{p.proposal_id}` | {p.target_file} | {p.action} | {'⚠️ yes' if p.suspected_injection else 'no'} | "
        f"{p.status} | {_cell(p.reason, 120)} | {_cell(p.content)} |"
        for p in proposals
    )
    return head + ("| id | file | action | suspected injection | status | reason | content |\n"
                   "|---|---|---|---|---|---|---|\n" + rows + "\n")

"""What may reach a knowledge file (pure). Everything distilled is stored and searchable; files are curated.

A memory goes to its knowledge file only when it carries knowledge:
- not small talk (greetings, thanks, backchannel, reactions) and not a bare question (`signals.analyse` on the
  memory text, the same check for the offline engine and for an LLM's memories);
- importance >= `knowledge_min_importance` (default 0.6: the prompt's "useful preference or fact" is 0.7,
  its "minor detail" 0.4; the offline engine reaches 0.6 with a rule, decision, preference or "remember",
  or with two weaker signals such as a first-person fact and a date);
- at most `DAILY_CAP` memories per file and note day, the most important first (`sections.apply`).
Protected files (`protected_files`, default SOUL.md, IDENTITY.md and AGENTS.md: files that instruct the assistant)
are never written by a run: what passes the gate for them becomes a proposal a human approves or rejects. A memory
the injection screen flagged (`reads_as_order`) is stored but becomes a flagged proposal, whatever its file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chronicle.distill.signals import analyse
from chronicle.distill.speaker import split_speaker
from chronicle.memory.model import Memory
from chronicle.settings import Settings

Verdict = Literal["file", "proposal", "order", "small_talk", "question", "below_min_importance"]
KEPT_OUT: tuple[Verdict, ...] = ("small_talk", "question", "below_min_importance")
DAILY_CAP = 5
"""Memories per knowledge file and note day: with importance 0.6, LoCoMo conversations written as daily notes give
15-19 knowledge-file lines per 100 turns (the rest stays searchable in the store)."""


@dataclass(frozen=True)
class KnowledgePolicy:
    min_importance: float = 0.6
    daily_cap: int = DAILY_CAP
    protected: tuple[str, ...] = ("SOUL.md", "IDENTITY.md", "AGENTS.md")
    overwrite_allowed: tuple[str, ...] = ("MEMORY.md", "USER.md", "AGENTS.md", "TOOLS.md")

    @classmethod
    def from_settings(cls, settings: Settings) -> KnowledgePolicy:
        return cls(min_importance=settings.memory.knowledge_min_importance,
                   protected=tuple(settings.memory.protected_files),
                   overwrite_allowed=tuple(settings.memory.overwrite_allowed_files))


def carries_knowledge(text: str) -> Verdict | None:
    """None when the text states something; else why it does not ("small_talk" or "question")."""
    utt = split_speaker(text)
    kind = analyse(utt.body, utt.role).kind
    return None if kind == "fact" else ("small_talk" if kind == "chatter" else "question")


def verdict(memory: Memory, policy: KnowledgePolicy) -> Verdict:
    """Where a stored memory goes besides the vector store: its file, a proposal, or nowhere (and why).
    `order`: it reads as an order to the assistant (`Memory.reads_as_order`): a flagged proposal, whatever its file."""
    if memory.reads_as_order:
        return "order"
    reason = carries_knowledge(memory.content)
    if reason is not None:
        return reason
    if memory.importance < policy.min_importance:
        return "below_min_importance"
    return "proposal" if memory.target_file in policy.protected else "file"

"""A memory in seed 002's shape, validated, plus the lineage Chronicle adds."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from chronicle.memory.subjects import normalise_subject
from chronicle.settings import KNOWLEDGE_FILES

TargetFile = Literal["MEMORY.md", "SOUL.md", "USER.md", "IDENTITY.md", "AGENTS.md", "TOOLS.md"]
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
MAX_CONTENT = 4000
"""The most characters a memory's content holds: a memory is a fact or a preference, not a document."""


class Memory(BaseModel):
    """One distilled memory (seed 002: content, summary, keyInfo, tags, importance, targetFile, action)."""

    content: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    key_info: list[str] = Field(default_factory=list, alias="keyInfo")
    tags: list[str] = Field(default_factory=list)
    importance: float = Field(ge=0.0, le=1.0)
    target_file: TargetFile = Field(alias="targetFile")
    action: Literal["append", "overwrite"] = "append"
    source: str = ""
    """Daily-note file name(s) the memory came from, e.g. `2026-03-23.md`."""
    source_entry_ids: list[str] = Field(default_factory=list)
    subject: str = ""
    """Whom the memory is about (`chronicle.memory.subjects`): a normalised name, `user`, or "" when unknown."""
    reads_as_order: bool = False
    """Set by the distillation's injection screen (never taken from a model's reply): the text reads as an order to
    the assistant. Such a memory is stored and searchable, shown with a marker, and reaches a knowledge file only
    through an approved proposal."""

    supersedes: list[str] = Field(default_factory=list)
    """Stored memories this one replaces, as the model decided when shown the subject's closest memories
    (`chronicle.distill.decide`; never taken from an extraction reply). The store marks them superseded by it,
    as the rules of `chronicle.memory.supersede` would: they stay in history and in `--as-of`."""
    same_as: str = ""
    """A stored memory that already says this, as the model decided (same source): nothing new is stored."""

    model_config = {"populate_by_name": True, "extra": "ignore"}

    @field_validator("tags")
    @classmethod
    def _clean_tags(cls, tags: list[str]) -> list[str]:
        out: list[str] = []
        for tag in tags:
            t = tag.strip().lstrip("#").strip()
            if t and t not in out:
                out.append(t)
        return out

    @field_validator("subject", mode="before")
    @classmethod
    def _clean_subject(cls, subject: object) -> str:
        return normalise_subject(subject) if isinstance(subject, str) else ""

    @property
    def content_hash(self) -> str:
        return content_hash(self.content)

    @property
    def language(self) -> str:
        return detect_language(self.content)

    def memory_id(self, created: datetime) -> str:
        """Seed 002 ids look like `2026-03-23-xxx`; the suffix is the content hash so reruns agree (with the subject
        folded in when there is one: two people's same words on one day are two rows)."""
        suffix = content_hash(f"{self.subject}\n{self.content}") if self.subject else self.content_hash
        return f"{created:%Y-%m-%d}-{suffix[:12]}"


def cut_content(text: str) -> str:
    """A memory's text, at most MAX_CONTENT characters whichever engine writes it. The note entry it cites keeps the
    whole text, while everything read from a memory's text is read whole: the offline rules, the injection screen
    and the packaged embedder (512 tokens at a time), which spent minutes of CPU on one pasted megabyte line."""
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 1] + "…"


def normalise(text: str) -> str:
    """Text as compared for exact duplicates: NFKC, case-folded, whitespace and trailing punctuation folded."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"\s+", " ", text).strip()
    return text.rstrip("。.!！?？;；,， ")


def content_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def detect_language(text: str) -> str:
    """`zh` when CJK characters make up a fair share of the letters, else `en` (enough for routing/FTS)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "und"
    cjk = sum(1 for c in letters if _CJK.match(c))
    return "zh" if cjk / len(letters) >= 0.2 else "en"


assert set(KNOWLEDGE_FILES) == set(TargetFile.__args__)  # type: ignore[attr-defined]


EventKind = Literal["ADD", "UPDATE", "NOOP"]


@dataclass(frozen=True)
class MemoryEvent:
    """What `MemoryStore.upsert` did with one input memory (input order is kept)."""

    event: EventKind
    memory_id: str
    """The row written (ADD), merged into (UPDATE) or already holding the content (NOOP)."""
    content_hash: str
    """Hash of the input memory's content."""
    target_file: str
    similarity: float | None
    """Cosine to the row it matched (1.0 for exact duplicates), None for ADD with nothing close."""
    reason: str
    supersedes: tuple[str, ...] = ()
    """Ids of the memories this one replaced (a knowledge update): their knowledge-file bullets move to history."""
    by_model: bool = False
    """A NOOP the model decided (`Memory.same_as`): the content itself was never stored, unlike the store's own
    NOOPs (an exact duplicate), so the ledger's repair of an interrupted run must not read it as stored."""

"""Forgetting and correcting memories, as pure rules: which stored rows a request selects, the tombstones that
keep a forgotten text from coming back, and what a correction makes of a row.

A tombstone is a content hash with the subject it was about. A distilled memory is forgotten when its content
hash has a tombstone of the same subject, or when either subject is unknown ("" — the text alone decides then):
a text forgotten about 张曼婷 stays forgotten when a later rule cannot tell whose it is, but the same words said
by another named person are that person's memory and are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from chronicle.memory.dedup import row_fts_text
from chronicle.memory.model import Memory, content_hash, detect_language, normalise
from chronicle.memory.records import StoredMemory
from chronicle.memory.subjects import normalise_subject
from chronicle.weeks import utc


class SelectorError(ValueError):
    """A forget request that selects nothing definite (no selector, or an ambiguous id prefix)."""


@dataclass(frozen=True)
class Selector:
    """What to forget: one memory by id (or a unique id prefix), everything about a person, text matches — `about`
    and `match` combine (memories about that person containing the text)."""

    memory_id: str | None = None
    about: str | None = None
    match: str | None = None

    def describe(self) -> str:
        parts = [f"id={self.memory_id}" if self.memory_id else "", f"about={self.about}" if self.about else "",
                 f"match={self.match}" if self.match else ""]
        return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class Tombstone:
    content_hash: str
    subject: str
    memory_id: str


def select(rows: Iterable[StoredMemory], selector: Selector) -> list[StoredMemory]:
    """The rows `selector` names. An id selects that row (or the one row whose id starts with it); `about` selects
    the rows about that person only; `match` the rows whose content, summary or an absorbed text contains it
    (case- and width-insensitive)."""
    rows = list(rows)
    if not (selector.memory_id or selector.about or selector.match):
        raise SelectorError("say what to forget: a memory ID, --about PERSON or --match TEXT")
    if selector.memory_id:
        wanted = selector.memory_id.strip()
        exact = [r for r in rows if r.id == wanted]
        rows = exact or [r for r in rows if r.id.startswith(wanted)]
        if len(rows) > 1:
            raise SelectorError(f"{wanted!r} matches {len(rows)} memories: {', '.join(r.id for r in rows[:5])}")
    if selector.about:
        subject = normalise_subject(selector.about)
        rows = [r for r in rows if (r.subject or "") == subject]
    if selector.match:
        needle = normalise(selector.match)
        rows = [r for r in rows if any(needle in normalise(t) for t in (*r.texts(), r.summary or ""))]
    return rows


def tombstones(rows: Iterable[StoredMemory]) -> list[Tombstone]:
    """Every text a row stands for (its own and each one merged into it), with its subject."""
    out: dict[tuple[str, str], Tombstone] = {}
    for r in rows:
        for h in dict.fromkeys([r.content_hash, *(r.merged_hashes or [])]):
            out.setdefault((h, r.subject or ""), Tombstone(h, r.subject or "", r.id))
    return list(out.values())


def is_forgotten(memory: Memory, stones: dict[str, set[str]]) -> bool:
    """`stones`: content hash -> subjects tombstoned with it."""
    subjects = stones.get(memory.content_hash)
    if not subjects:
        return False
    return memory.subject in subjects or "" in subjects or memory.subject == ""


def corrected(row: StoredMemory, text: str, *, now: datetime, summary: str | None = None) -> StoredMemory:
    """`row` stating `text` (already redacted) instead: the texts merged into it phrased the old fact, so they go;
    id, subject, file, tags, importance and history stay."""
    new_summary = summary if summary else text
    return replace(
        row, content=text, summary=new_summary, content_hash=content_hash(text), merged_hashes=[content_hash(text)],
        absorbed=[], key_info=[], language=detect_language(text), updated=utc(now),
        fts_text=row_fts_text(text, new_summary, [], list(row.tags), []),
    )

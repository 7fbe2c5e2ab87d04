"""Daily-note entries -> redacted, per-day chunks of bounded size (pure).

A chunk is the unit of one LLM call and of the distillation cache: its `input_hash` covers exactly the
redacted text the model sees, so a day that did not change is never sent again, and a day that grew by
appended notes only re-sends its last chunk (chunk boundaries are filled front to back).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, replace
from datetime import date
from itertools import groupby
from pathlib import PurePath

from chronicle.redaction.redactor import Redactor, split_secret_markers

CHUNK_CHARS = 6000
"""Characters of (redacted) note text per distillation prompt; a bigger day is split into several chunks."""
TRUNCATED = " …[truncated]"


@dataclass(frozen=True)
class NoteEntry:
    """One bullet / paragraph / table / code block of a daily note, as stored in `raw_logs`."""

    entry_id: str
    project_id: str
    day: date
    source_file: str
    line_no: int | None
    kind: str
    content: str
    heading_path: tuple[str, ...] = ()
    parent: str | None = None

    @property
    def source_name(self) -> str:
        """The note's file name (`2026-02-14.md`); the absolute path never leaves the machine."""
        return PurePath(self.source_file).name


@dataclass(frozen=True)
class Chunk:
    day: date
    index: int
    entries: tuple[NoteEntry, ...]
    text: str
    """Rendered, redacted entries exactly as placed in the prompt."""

    @property
    def key(self) -> str:
        return f"{self.day.isoformat()}#{self.index}"

    @property
    def sources(self) -> list[str]:
        return sorted({e.source_name for e in self.entries})

    @property
    def source(self) -> str:
        return ",".join(self.sources)

    @property
    def input_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def project_id(self) -> str:
        return self.entries[0].project_id


def redact_entries(entries: list[NoteEntry], redactor: Redactor, counts: Counter[str]) -> list[NoteEntry]:
    """Entries with content, parent bullet, headings AND source file name redacted; `counts` gets the kinds found.

    The file name matters: `2026-03-02-call-13912345678.md` would otherwise travel into prompts, section
    headers, `distill_chunks`, `memory_events` and LanceDB. An entry that is only the second half of a key
    split over two lines (the parser made two entries of it) is hidden with the first.
    """
    out = []
    names: dict[str, str] = {}  # each file name redacted (and counted) once, not once per entry
    split = split_secret_markers(redactor, ((e.entry_id, e.source_file, e.line_no, e.content) for e in entries))
    for e in entries:
        marker = split.get(e.entry_id)
        if e.source_file not in names:
            names[e.source_file] = redactor.redact(e.source_file, counts)
        out.append(replace(e, source_file=names[e.source_file], content=marker or redactor.redact(e.content, counts),
                           parent=redactor.redact(e.parent, counts) if e.parent else None,
                           heading_path=tuple(redactor.redact(h, counts) for h in e.heading_path)))
    return out


def neutralise(text: str) -> str:
    """Break prompt delimiters inside data so note text cannot close the DATA block and speak as instructions."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


def render_entry(number: int, entry: NoteEntry, limit: int, previous: tuple[str, ...] | None) -> str:
    """`§ Heading > Sub` when the heading path changes (headings once, not per entry), then `[n] parent → text`."""
    text = entry.content if len(entry.content) <= limit else entry.content[:limit] + TRUNCATED
    head = f"§ {' > '.join(entry.heading_path)}\n" if entry.heading_path and entry.heading_path != previous else ""
    parent = f"{entry.parent} → " if entry.parent else ""
    body = "\n    ".join(text.splitlines())  # continuation lines indented: entries stay visibly separate
    return neutralise(f"{head}[{number}] {parent}{body}")


def make_chunks(entries: list[NoteEntry], budget_chars: int = CHUNK_CHARS) -> list[Chunk]:
    """Group entries by day (ordered by file and line) and cut each day into chunks of <= `budget_chars`.

    One entry is never split across chunks; an entry longer than the whole budget is truncated for the
    prompt (a pasted log dump would otherwise overflow the model's context and fail the call for good).
    """
    budget = max(200, budget_chars)
    ordered = sorted(entries, key=lambda e: (e.day, e.source_file, e.line_no or 0, e.entry_id))
    chunks: list[Chunk] = []
    for day, group in groupby(ordered, key=lambda e: e.day):
        index, current, lines, size = 0, [], [], 0
        for entry in group:
            previous = current[-1].heading_path if current else None
            line = render_entry(len(current) + 1, entry, budget, previous)
            if current and size + len(line) + 1 > budget:
                chunks.append(_chunk(day, index, current, lines))
                index, current, lines, size = index + 1, [], [], 0
                line = render_entry(1, entry, budget, None)
            current.append(entry)
            lines.append(line)
            size += len(line) + 1
        if current:
            chunks.append(_chunk(day, index, current, lines))
    return chunks


def _chunk(day: date, index: int, entries: list[NoteEntry], lines: list[str]) -> Chunk:
    return Chunk(day, index, tuple(entries), "\n".join(lines))

"""Managed sections of a knowledge file (pure text in, text out).

Chronicle writes only between its own markers, one section per note day and source:

    <!-- chronicle:begin 2026-02-14 source=2026-02-14.md -->
    ## 🧠 Distilled 2026-02-14 (from 2026-02-14.md)

    - memory text <!-- chronicle:mem id=2026-02-14-3f2a… hash=9c1e… -->
    <!-- chronicle:end -->

Everything else in the file is the human's and is kept byte for byte (line endings included). Each bullet
carries its memory id and content hash, so writing the same memory again is a no-op wherever it sits.

A file takes at most `cap` bullets per note day (counting those already there): the most important items win,
and are placed in their original order. A rerun finds the day full and skips the same items again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

HASH_CHARS = 16
_BEGIN = re.compile(r"^<!-- chronicle:begin (?P<day>\S+) source=(?P<source>.*?) -->\s*$")
_END = re.compile(r"^<!-- chronicle:end -->\s*$")
_MARK = re.compile(r"<!-- chronicle:mem id=(?P<id>\S+) hash=(?P<hash>[0-9a-f]+) -->")


@dataclass(frozen=True)
class Item:
    """One memory to place in one file."""

    memory_id: str
    content_hash: str
    text: str
    day: str
    source: str
    action: Literal["append", "overwrite"] = "append"
    merged: bool = False
    """The store folded this memory into the existing row `memory_id` (UPDATE/NOOP): that row's bullet
    stands for it, so it is written only if the file lacks the row (e.g. a run stopped before writing)."""
    importance: float = 0.0
    """Decides which items a full day keeps (`apply(cap=…)`)."""


@dataclass
class Stats:
    added: int = 0
    present: int = 0
    overwritten_sections: int = 0
    capped: int = 0
    """Items left out because their day already held `cap` bullets in this file."""


def escape(text: str) -> str:
    """One line, and no comment markers: note text must not be able to forge or close our markers."""
    text = " ".join(text.split())
    return text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def bullet(item: Item) -> str:
    return f"- {escape(item.text)} <!-- chronicle:mem id={item.memory_id} hash={item.content_hash[:HASH_CHARS]} -->"


def _sections(lines: list[str]) -> list[tuple[int, int, str, str]]:
    """(begin index, end index, day, source) of well-formed sections; an unclosed begin is left alone."""
    out, open_at = [], None
    for i, line in enumerate(lines):
        begin = _BEGIN.match(line)
        if begin:
            open_at = (i, begin.group("day"), begin.group("source"))
        elif _END.match(line) and open_at is not None:
            out.append((open_at[0], i, open_at[1], open_at[2]))
            open_at = None
    return out


def _marks(lines: list[str]) -> tuple[set[str], set[str]]:
    ids, hashes = set(), set()
    for line in lines:
        for m in _MARK.finditer(line):
            ids.add(m.group("id"))
            hashes.add(m.group("hash"))
    return ids, hashes


def _day_counts(lines: list[str]) -> dict[str, int]:
    """Bullets per day in the managed sections."""
    counts: dict[str, int] = {}
    for begin, end, day, _ in _sections(lines):
        counts[day] = counts.get(day, 0) + sum(1 for line in lines[begin:end] if _MARK.search(line))
    return counts


def _within_cap(lines: list[str], items: list[Item], cap: int, stats: Stats) -> list[Item]:
    """Items already in the file, plus the most important new ones each day still has room for."""
    ids, hashes = _marks(lines)
    room = {day: cap - n for day, n in _day_counts(lines).items()}
    fresh = [(i, it) for i, it in enumerate(items)
             if not (it.content_hash[:HASH_CHARS] in hashes or (it.merged and it.memory_id in ids))]
    chosen: set[int] = set()
    seen: set[str] = set()
    for i, it in sorted(fresh, key=lambda pair: (-pair[1].importance, pair[0])):
        if it.content_hash[:HASH_CHARS] in seen:  # the same memory twice counts once
            chosen.add(i)
            continue
        day = _key(it)[0]
        if room.get(day, cap) > 0:
            room[day] = room.get(day, cap) - 1
            chosen.add(i)
            seen.add(it.content_hash[:HASH_CHARS])
    fresh_ids = {i for i, _ in fresh}
    stats.capped += len(fresh_ids - chosen)
    return [it for i, it in enumerate(items) if i not in fresh_ids or i in chosen]


def apply(text: str, items: list[Item], cap: int | None = None) -> tuple[str, Stats]:
    """`text` with `items` placed, in order; an `overwrite` first drops the managed sections of other notes.

    `cap`: at most this many bullets per note day in the file (None: no limit).
    """
    nl = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    stats = Stats()
    if cap is not None:
        items = _within_cap(lines, items, max(0, cap), stats)
    for item in items:
        ids, hashes = _marks(lines)
        if item.content_hash[:HASH_CHARS] in hashes or (item.merged and item.memory_id in ids):
            stats.present += 1
            continue
        if item.action == "overwrite":
            key = _key(item)
            stats.overwritten_sections += sum(1 for s in _sections(lines) if (s[2], s[3]) != key)
            lines = _drop_sections(lines, keep=key)
        lines = _append(lines, item, nl)
        stats.added += 1
    return "".join(lines), stats


def _key(item: Item) -> tuple[str, str]:
    """(day, source) as written in the begin marker."""
    return escape(item.day).replace(" ", "_"), escape(item.source)


def _append(lines: list[str], item: Item, nl: str) -> list[str]:
    day, source = _key(item)
    for _, end, have_day, have_source in _sections(lines):
        if have_day == day and have_source == source:
            return [*lines[:end], bullet(item) + nl, *lines[end:]]
    out = list(lines)
    if out and not out[-1].endswith(("\n", "\r")):
        out[-1] += nl
    if out and out[-1].strip():
        out.append(nl)
    out += [
        f"<!-- chronicle:begin {day} source={source} -->{nl}",
        f"## 🧠 Distilled {day} (from {source}){nl}",
        nl,
        bullet(item) + nl,
        f"<!-- chronicle:end -->{nl}",
    ]
    return out


def _drop_sections(lines: list[str], keep: tuple[str, str]) -> list[str]:
    """Lines without the managed sections of other days/sources (this item's own section holds memories of
    the same note, which the overwrite does not supersede); surrounding blank lines may be the human's."""
    drop: set[int] = set()
    for begin, end, day, source in _sections(lines):
        if (day, source) != keep:
            drop.update(range(begin, end + 1))
    return [line for i, line in enumerate(lines) if i not in drop]

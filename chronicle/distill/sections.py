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

Files about people (USER.md) keep one section per person instead of per day (`Item.subject`):

    <!-- chronicle:begin person:张曼婷 source=USER.md -->
    ## 👤 张曼婷

A knowledge update (`Item.supersedes`) shows the current fact only, on the line of the fact it replaced (so a
changed preference updates its line in place); the bullets of the facts it replaced move
to one history section at the end (`<!-- chronicle:begin history source=superseded -->`), each marked
"(superseded on DAY)" and keeping its id and hash, so a rerun neither re-adds nor moves it again.

A file may have a size budget (`fit`): past it, the least important bullets leave the file — superseded ones
first, then by importance, older first — and stay in the vector store, where search still finds them.

A fact the file already states in the same words on another day ("截至 2026-02-14，累计入组 80 例" and the same
on 02-21: `fact_key`) is not written again.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
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
    subject: str = ""
    """Whom it is about, for a file about people (USER.md): the bullet goes to that person's section."""
    supersedes: tuple[str, ...] = ()
    """Memory ids this one replaced: their bullets move to the file's history section, marked with the day."""


@dataclass
class Stats:
    added: int = 0
    present: int = 0
    overwritten_sections: int = 0
    capped: int = 0
    """Items left out because their day already held `cap` bullets in this file."""
    repeated: int = 0
    """Items left out because the file already states the same fact (same words once dates are set aside)."""
    moved_out: int = 0
    """Bullets that left the file for its size budget (`fit`); their memories stay in the store."""


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


PERSON, HISTORY = "person:", "history"


def _current_marks(lines: list[str]) -> Iterator[tuple[str, re.Match[str], str]]:
    """(line, its mark, section day) of each marked line in the current managed sections (not the history)."""
    for begin, end, day, _ in _sections(lines):
        if day != HISTORY:
            for line in lines[begin:end]:
                if mark := _MARK.search(line):
                    yield line, mark, day


def _day_counts(lines: list[str]) -> Counter[str]:
    """Bullets per note day in the managed sections (a person's section: by the day in each memory id)."""
    return Counter(mark.group("id")[:10] if day.startswith(PERSON) else day for _, mark, day in _current_marks(lines))


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
        day = _key(it)[0] if not it.subject else escape(it.day).replace(" ", "_")
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
    facts_in_file = _fact_keys(lines)
    for item in items:
        ids, hashes = _marks(lines)
        at = None
        if item.supersedes:
            lines, at = _to_history(lines, item, nl)
            ids, hashes = _marks(lines)
            facts_in_file = _fact_keys(lines)
        if item.content_hash[:HASH_CHARS] in hashes or (item.merged and item.memory_id in ids):
            stats.present += 1
            continue
        if item.action == "overwrite" and not item.subject:
            key = _key(item)
            stats.overwritten_sections += sum(1 for s in _sections(lines) if (s[2], s[3]) != key and _by_day(s[2]))
            lines, at = _drop_sections(lines, keep=key), None
            facts_in_file = _fact_keys(lines)
        fact = fact_key(item.text)
        if fact and fact in facts_in_file:
            stats.repeated += 1
            continue
        # The current fact takes the line of the one it replaced.
        lines = [*lines[:at], bullet(item) + nl, *lines[at:]] if at is not None else _append(lines, item, nl)
        facts_in_file.add(fact)
        stats.added += 1
    return "".join(lines), stats


_DATES = re.compile(r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}\s*日?|\d{1,2}\s*月\s*\d{1,2}\s*[日号]|"
                    r"\b\d{1,2} (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{4}\b|"
                    r"截至|截止|as of|今天|今日|today", re.I)
MIN_FACT_KEY = 6


def fact_key(text: str) -> str:
    """What a bullet states, for spotting the same fact written on another day: case, punctuation, spacing and
    dates set aside ("截至 2026-02-14，P 累计入组 80 例" and "截至 2026-02-21，P 累计入组 80 例" are one fact; a
    different number is not). "" for text too short to tell."""
    text = _DATES.sub(" ", unicodedata.normalize("NFKC", text).casefold())
    key = "".join(c for c in text if c.isalnum())
    return key if len(key) >= MIN_FACT_KEY else ""


def _fact_keys(lines: list[str]) -> set[str]:
    """The fact keys of the bullets in the current managed sections (the history section's are not current)."""
    return {fact_key(line[2:mark.start()]) for line, mark, _ in _current_marks(lines) if line.startswith("- ")} - {""}


def _key(item: Item) -> tuple[str, str]:
    """(day, source) as written in the begin marker (a person's section: `person:<name>`, source the file)."""
    if item.subject:
        return escape(PERSON + item.subject).replace(" ", "_"), "USER.md"
    return escape(item.day).replace(" ", "_"), escape(item.source)


def _by_day(day: str) -> bool:
    """A section of one note day (what an overwrite replaces); people's sections and the history are not."""
    return not day.startswith(PERSON) and day != HISTORY


def _title(day: str, source: str) -> str:
    if day.startswith(PERSON):
        return f"## 👤 {day[len(PERSON):].replace('_', ' ')}"
    if day == HISTORY:
        return "## 🕰 History (superseded facts)"
    return f"## 🧠 Distilled {day} (from {source})"


def _append(lines: list[str], item: Item, nl: str, key: tuple[str, str] | None = None,
            line: str | None = None) -> list[str]:
    day, source = key or _key(item)
    text = line if line is not None else bullet(item)
    history_at = None
    for begin, end, have_day, have_source in _sections(lines):
        if have_day == day and have_source == source:
            return [*lines[:end], text + nl, *lines[end:]]
        if have_day == HISTORY:
            history_at = begin
    block = [f"<!-- chronicle:begin {day} source={source} -->{nl}", _title(day, source) + nl, nl, text + nl,
             f"<!-- chronicle:end -->{nl}"]
    if history_at is not None:  # new sections go above the history, which stays last
        return [*lines[:history_at], *block, nl, *lines[history_at:]]
    out = list(lines)
    if out and not out[-1].endswith(("\n", "\r")):
        out[-1] += nl
    if out and out[-1].strip():
        out.append(nl)
    return out + block


def _to_history(lines: list[str], item: Item, nl: str) -> tuple[list[str], int | None]:
    """The bullets of the memories `item` replaced, moved from their sections into the history section; and
    where the first of them stood (an index into the returned lines), None when none was in the file."""
    moved: list[str] = []
    keep: list[str] = []
    at = None
    history = {i for b, e, day, _ in _sections(lines) if day == HISTORY for i in range(b, e + 1)}
    for i, line in enumerate(lines):
        mark = _MARK.search(line)
        if mark and mark.group("id") in item.supersedes and i not in history:
            at = len(keep) if at is None else at
            body = line.rstrip("\r\n")
            text, marker = body[: mark.start()].rstrip(), body[mark.start():]
            moved.append(f"{text} (superseded on {escape(item.day)}) {marker}")
        else:
            keep.append(line)
    for line in moved:
        keep = _append(keep, item, nl, key=(HISTORY, "superseded"), line=line)
    return keep, at


def _drop_sections(lines: list[str], keep: tuple[str, str]) -> list[str]:
    """Lines without the managed sections of other days/sources (this item's own section holds memories of
    the same note, which the overwrite does not supersede); surrounding blank lines may be the human's."""
    drop: set[int] = set()
    for begin, end, day, source in _sections(lines):
        if (day, source) != keep and _by_day(day):
            drop.update(range(begin, end + 1))
    return [line for i, line in enumerate(lines) if i not in drop]


DEFAULT_IMPORTANCE = 0.5
"""For a bullet whose memory the store no longer knows (a hand-copied line, a store rebuilt)."""


def fit(text: str, budget: int, importance: Callable[[set[str]], Mapping[str, float]]) -> tuple[str, int]:
    """`text` with the least important managed bullets taken out until the managed bullets' own text is at most
    `budget` characters; (new text, bullets taken out). The human's text is neither counted nor touched.

    Order of leaving: the history section's bullets (superseded facts), oldest first; then current bullets by
    importance (`importance(ids)`: memory id -> importance, asked only when the file is over its budget), the
    least first, older first on a tie (ids begin with their day). The order is total, so a rerun that brings the
    same items back takes the same ones out again and the file does not change. A section left without bullets
    goes with them."""
    lines = text.splitlines(keepends=True)
    bullets = []  # (line index, memory id, in the history section, characters)
    for begin, end, day, _ in _sections(lines):
        for i in range(begin + 1, end):
            mark = _MARK.search(lines[i])
            if mark and lines[i].startswith("- "):
                bullets.append((i, mark.group("id"), day == HISTORY, len(lines[i][2:mark.start()].strip())))
    over = sum(size for *_, size in bullets) - budget
    if over <= 0:
        return text, 0
    weight = importance({mid for _, mid, history, _ in bullets if not history})
    drop: set[int] = set()
    for _, i, size in sorted(((0, 0.0, mid) if history else (1, weight.get(mid, DEFAULT_IMPORTANCE), mid), i, size)
                             for i, mid, history, size in bullets):
        if over <= 0:
            break
        drop.add(i)
        over -= size
    moved = len(drop)
    for begin, end, _, _ in _sections(lines):
        if not any(_MARK.search(lines[i]) for i in range(begin + 1, end) if i not in drop):
            drop.update(range(begin, end + 1))  # the blank line after it too, when one separates it from the next
            if end + 1 < len(lines) and not lines[end + 1].strip() and (begin == 0 or not lines[begin - 1].strip()):
                drop.add(end + 1)
    return "".join(line for i, line in enumerate(lines) if i not in drop), moved


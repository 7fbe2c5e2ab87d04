"""The chronicle block of seed 000 and the plan that folds old weeks into rollups — pure functions.

Over a token budget, the oldest whole months are folded first (one rollup each), then the oldest
quarters, then years, until the block fits; the month holding the newest week is never folded, so
the latest weeks always stay verbatim. Rollups are costed at their length limit (an upper bound),
so a plan that fits on paper fits once they are written.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property, lru_cache
from typing import Any

from chronicle.weekly.faithfulness import strip_citations
from chronicle.weekly.tokens import estimate_tokens
from chronicle.weeks import IsoWeek

HEADER = "=== 项目编年史 (Project Chronicle) ==="
FOOTER = "===================================="  # seed 000's closing line
LEVELS = ("month", "quarter", "year")
ROLLUP_VERSION = "rollup-v1"
"""Salts every rollup's covered hash: bump it when the rollup prompt or extractive rules change."""
_MARKUP = re.compile(r"^[ \t]*(?:#+[ \t]*|[-*+][ \t]+)|\*\*", re.M)


@dataclass(frozen=True)
class ChronicleWeek:
    """One week as the chronicle shows it: the clean (edited, where edited) text, one line."""

    week_number: int
    text: str
    stats: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    source: str = field(default="", compare=False)  # the clean multi-line report, for rollups

    @cached_property
    def tokens(self) -> int:
        return estimate_tokens(self.text) + 4  # "[Week YYYYWW]: " prefix


@dataclass(frozen=True)
class Block:
    """A line of the chronicle: one week verbatim, or a rollup of several."""

    level: str  # week | month | quarter | year
    period: str
    weeks: tuple[ChronicleWeek, ...]

    @property
    def first(self) -> int:
        return self.weeks[0].week_number

    @property
    def last(self) -> int:
        return self.weeks[-1].week_number


FLAGGED_MARK = "[待复核 needs review]"
"""Prefix of a week in the chronicle block whose report the faithfulness guard flagged and nobody reviewed."""


def week_line(summary: str, *, flagged: bool) -> str:
    """A week's chronicle text, marked when flagged."""
    return f"{FLAGGED_MARK} {one_line(summary)}" if flagged else one_line(summary)


def one_line(summary: str) -> str:
    """A report as one chronicle line: citations and Markdown markers dropped, lines joined."""
    parts = (line.strip() for line in _MARKUP.sub("", strip_citations(summary)).splitlines())
    return " ".join(p for p in parts if p)


@lru_cache(maxsize=4096)
def period_of(week_number: int, level: str) -> str:
    """Month/quarter/year a week belongs to: that of its Thursday (the ISO rule for years, too)."""
    thursday = IsoWeek.from_number(week_number).start_date + timedelta(days=3)
    if level == "month":
        return f"{thursday.year}-{thursday.month:02d}"
    if level == "quarter":
        return f"{thursday.year}-Q{(thursday.month - 1) // 3 + 1}"
    return str(thursday.year)


def covered_hash(weeks: Sequence[ChronicleWeek]) -> str:
    """Identity of a rollup's inputs: any edit or stats change of a covered week changes it."""
    digest = hashlib.sha256(ROLLUP_VERSION.encode())
    for w in weeks:
        digest.update(f"{w.week_number}\x1f{w.text}\x1f{json.dumps(w.stats, sort_keys=True)}\x1e".encode())
    return digest.hexdigest()


def _cost(blocks: Sequence[Block], rollup_tokens: int) -> int:
    # A rollup is at most its length limit, and never longer than the weeks it folds.
    return sum(b.weeks[0].tokens if b.level == "week" else min(rollup_tokens, sum(w.tokens for w in b.weeks))
               for b in blocks)


def _fold_oldest(blocks: list[Block], level: str, newest: str) -> list[Block] | None:
    """Fold the oldest `level` period (other than the newest) not yet a single rollup, or None.

    Oldest first even when a quiet month saves little: folded periods then always precede the
    verbatim weeks, and the chronicle reads in order.
    """
    keys = [period_of(b.first, level) if period_of(b.first, level) == period_of(b.last, level) else None
            for b in blocks]
    for key in dict.fromkeys(k for k in keys if k is not None and k != newest):
        idx = [i for i, k in enumerate(keys) if k == key]
        members = [blocks[i] for i in idx]
        if len(members) == 1 and members[0].level != "week":
            continue  # already one rollup
        weeks = tuple(w for b in members for w in b.weeks)
        return [*blocks[: idx[0]], Block(level, key, weeks), *blocks[idx[-1] + 1:]]
    return None


def plan_blocks(weeks: Sequence[ChronicleWeek], max_tokens: int | None, rollup_tokens: int) -> list[Block]:
    """The chronicle's lines within `max_tokens` (None = everything verbatim)."""
    blocks = [Block("week", str(w.week_number), (w,)) for w in weeks]
    if max_tokens is None or not blocks:
        return blocks
    budget = max_tokens - estimate_tokens(HEADER + FOOTER)
    for level in LEVELS:
        newest = period_of(blocks[-1].last, level)
        while _cost(blocks, rollup_tokens) > budget:
            folded = _fold_oldest(blocks, level, newest)
            if folded is None:
                break
            blocks = folded
        if _cost(blocks, rollup_tokens) <= budget:
            break
    return blocks


def render(blocks: Sequence[Block], rollups: dict[tuple[str, str], str] | None = None) -> str:
    """Seed 000's block: header, one `[Week YYYYWW]: summary` line per week (or rollup), footer."""
    lines = [HEADER]
    for b in blocks:
        if b.level == "week":
            lines.append(f"[Week {b.first}]: {b.weeks[0].text}")
        else:
            text = one_line((rollups or {}).get((b.level, b.period), ""))
            lines.append(f"[{b.level.capitalize()} {b.period} ({b.first}–{b.last})]: {text}")
    lines.append(FOOTER)
    return "\n".join(lines)

"""What time does to a ranked list of memories (pure): current facts first, optional importance half-life.

`chronicle.storage.memory.search` scores relevance and importance (`chronicle.memory.search.fuse`); this adjusts those
scores for time and re-sorts:

- Ageing (off by default, `MEMORY_IMPORTANCE_HALF_LIFE_DAYS`): the importance term decays as
  `importance x 0.5 ** (age_days / half_life)`, age counted from the memory's `created` to the reference
  day (today, or the as-of day). Only the ranking changes; nothing is deleted by age.
- Superseded memories (a newer memory replaced the fact, `chronicle.memory.supersede`) lose
  `SUPERSEDED_PENALTY` and never rank above their successor when both are found. An as-of search has
  already kept only what was current then, so it has nothing to demote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from chronicle.memory.records import SearchHit, utc
from chronicle.memory.search import ScoreRule, importance_term

SUPERSEDED_PENALTY = 0.15
"""Subtracted from a superseded memory's score: about the gap between a good and a middling match."""

H = TypeVar("H", bound=SearchHit)


def decayed(importance: float, created: datetime | None, now: datetime, half_life_days: float) -> float:
    """`importance` after ageing (unchanged when the half-life is 0 / off, or the age is unknown or negative)."""
    if half_life_days <= 0 or created is None:
        return importance
    age = (utc(now) - utc(created)).total_seconds() / 86400.0
    return importance * 0.5 ** (max(0.0, age) / half_life_days)


def rerank(
    hits: Sequence[H], *, now: datetime, importance_weight: float, half_life_days: float = 0.0,
    demote_superseded: bool = True, rule: ScoreRule = "scaled",
) -> list[H]:
    """`hits` with time-adjusted scores, best first (see the module docstring)."""
    out = []
    for hit in hits:
        score = hit.score
        if half_life_days > 0:
            # Only the importance term of the score ages (`memory.search.importance_term`, the rule of `fuse`).
            lost = hit.importance - decayed(hit.importance, hit.created, now, half_life_days)
            score -= importance_term(hit.semantic, lost, importance_weight, rule)
        if demote_superseded and hit.superseded_by:
            score -= SUPERSEDED_PENALTY
        out.append(replace(hit, score=score))
    out.sort(key=lambda h: (-h.score, -h.cosine, h.id))
    if not demote_superseded:
        return out
    # A superseded hit found together with its successor goes right below it, whatever the scores.
    position = {h.id: n for n, h in enumerate(out)}
    moved = [h for h in out if h.superseded_by in position and position[h.superseded_by] > position[h.id]]
    for hit in moved:
        out.remove(hit)
        out.insert(out.index(next(h for h in out if h.id == hit.superseded_by)) + 1, hit)
    return out

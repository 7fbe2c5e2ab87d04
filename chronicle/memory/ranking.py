"""What time does to a ranked list of memories (pure): current facts first, optional importance half-life.

`chronicle.storage.memory.search` scores relevance and importance (`chronicle.memory.search.fuse`); this adjusts those
scores for time and re-sorts:

- Ageing (off by default, `MEMORY_IMPORTANCE_HALF_LIFE_DAYS`): the importance term decays as
  `importance x 0.5 ** (age_days / half_life)`, age counted from the memory's `created` to the reference
  day (today, or the as-of day). Only the ranking changes; nothing is deleted by age.
- Recency (off by default, `MEMORY_RECENCY_HALF_LIFE_DAYS`): the whole score halves every half-life of age.
- A cosine floor (`MEMORY_MIN_COSINE`, measured per model in `MODEL_FLOORS`): below it a memory is no match.
- Superseded memories (a newer memory replaced the fact, `chronicle.memory.supersede`) lose
  `SUPERSEDED_PENALTY` and never rank above their successor when both are found. An as-of search has
  already kept only what was current then, so it has nothing to demote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from chronicle.memory.records import SearchHit, utc
from chronicle.memory.search import ScoreRule, importance_term

MODEL_FLOORS: dict[str, float] = {}
"""Cosine floor per embedding model, where one was found that costs no answers. None so far: the packaged E5
puts any two texts at 0.75-0.95 (related questions' best match 0.81-0.96, unrelated ones' 0.79-0.89), and a
floor of 0.84 cut LoCoMo evidence hit@10 from 0.83 to 0.46 (bench/memory_e2e). Set `MEMORY_MIN_COSINE` for an
encoder whose scale separates the two (MiniLM: unrelated best match mostly 0.2-0.3)."""


@dataclass(frozen=True)
class Tuning:
    """Ranking options read from the settings: the cosine floor and the recency half-life (0 = off)."""

    floor: float = 0.0
    recency_half_life_days: float = 0.0

    @classmethod
    def of(cls, settings: Any, model_name: str) -> Tuning:
        floor = settings.memory.min_cosine
        return cls(MODEL_FLOORS.get(model_name, 0.0) if floor is None else floor,
                   settings.memory.recency_half_life_days)


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
    demote_superseded: bool = True, rule: ScoreRule = "scaled", tuning: Tuning | None = None,
) -> list[H]:
    """`hits` with time-adjusted scores, best first (see the module docstring); `tuning`: hits under the cosine
    floor are dropped, and with a recency half-life the whole score decays with age."""
    tuning = tuning or Tuning()
    out = []
    for hit in hits:
        if tuning.floor > 0 and hit.cosine < tuning.floor:
            continue
        score = decayed(hit.score, hit.created, now, tuning.recency_half_life_days)
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

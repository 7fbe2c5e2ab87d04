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
- A query that names a person (the subject of a memory found: "What is Gina's favourite dance?") is about
  them: a memory about *another* person that does not mention them keeps `ELSEWHERE_FACTOR` of its score
  (`elsewhere`). Without a scope that is the one clue to whose memory is meant; memories of unknown subject
  and memories that mention the named person are untouched, and a scoped search has only that person's.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from chronicle.memory.records import SearchHit
from chronicle.memory.search import ScoreRule, importance_term
from chronicle.weeks import utc

MODEL_FLOORS: dict[str, float] = {}
"""Cosine floor per embedding model, where one was found that costs no answers. None so far: the packaged E5
puts any two texts at 0.75-0.95 (related questions' best match 0.81-0.96, unrelated ones' 0.79-0.89), and a
floor of 0.84 cut LoCoMo evidence hit@10 from 0.83 to 0.46 (bench/memory_e2e). Set `MEMORY_MIN_COSINE` for an
encoder whose scale separates the two (MiniLM: unrelated best match mostly 0.2-0.3)."""

ELSEWHERE_FACTOR = 0.85
"""Share of its score a memory about someone other than the person a query names keeps (`elsewhere`): about the
gap between a query's best and fifth match; chosen by bench/memory_weights.py."""


@dataclass(frozen=True)
class Tuning:
    """Ranking options read from the settings: the cosine floor, the recency half-life (0 = off) and the share of
    its score a memory about someone the query does not name keeps (1 = off)."""

    floor: float = 0.0
    recency_half_life_days: float = 0.0
    elsewhere: float = ELSEWHERE_FACTOR

    @classmethod
    def of(cls, settings: Any, model_name: str) -> Tuning:
        floor, elsewhere = settings.memory.min_cosine, settings.memory.search_named_subject_factor
        return cls(MODEL_FLOORS.get(model_name, 0.0) if floor is None else floor,
                   settings.memory.recency_half_life_days, ELSEWHERE_FACTOR if elsewhere is None else elsewhere)


SUPERSEDED_PENALTY = 0.15
"""Subtracted from a superseded memory's score: about the gap between a good and a middling match."""

H = TypeVar("H", bound=SearchHit)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def named_subjects(query: str, subjects: Iterable[str]) -> frozenset[str]:
    """The subject keys among `subjects` that `query` names: a Latin-script name as a whole word (case-folded),
    a Chinese one anywhere (Chinese has no spaces between words)."""
    folded = unicodedata.normalize("NFKC", query).casefold()
    return frozenset(s for s in subjects if s and _names(folded, s))


def _names(folded: str, key: str) -> bool:
    if _CJK.search(key):
        return key in folded
    return re.search(rf"(?<![^\W_]){re.escape(key)}(?![^\W_])", folded) is not None


def elsewhere(hit: SearchHit, named: frozenset[str]) -> bool:
    """Whether `hit` is about a person other than those the query names, and does not mention them."""
    if not named or not hit.subject or hit.subject in named:
        return False
    folded = unicodedata.normalize("NFKC", hit.content).casefold()
    return not any(_names(folded, name) for name in named)


def decayed(importance: float, created: datetime | None, now: datetime, half_life_days: float) -> float:
    """`importance` after ageing (unchanged when the half-life is 0 / off, or the age is unknown or negative)."""
    if half_life_days <= 0 or created is None:
        return importance
    age = (utc(now) - utc(created)).total_seconds() / 86400.0
    return importance * 0.5 ** (max(0.0, age) / half_life_days)


def rerank(hits: Sequence[H], *, now: datetime, importance_weight: float, half_life_days: float = 0.0,
           demote_superseded: bool = True, rule: ScoreRule = "scaled", tuning: Tuning | None = None,
           query: str = "") -> list[H]:
    """`hits` with time-adjusted scores, best first (see the module docstring); `tuning`: hits under the cosine
    floor are dropped, and with a recency half-life the whole score decays with age; `query`: the search text,
    whose named people (`named_subjects`) demote memories about others."""
    tuning = tuning or Tuning()
    named = named_subjects(query, {h.subject for h in hits}) if query else frozenset()
    out = []
    for hit in hits:
        if tuning.floor > 0 and hit.cosine < tuning.floor:
            continue
        score = decayed(hit.score, hit.created, now, tuning.recency_half_life_days)
        if half_life_days > 0:
            # Only the importance term of the score ages (`memory.search.importance_term`, the rule of `fuse`).
            lost = hit.importance - decayed(hit.importance, hit.created, now, half_life_days)
            score -= importance_term(hit.semantic, lost, importance_weight, rule)
        if elsewhere(hit, named):
            score *= tuning.elsewhere
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

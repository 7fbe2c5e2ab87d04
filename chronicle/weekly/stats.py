"""Deterministic weekly counts from raw-log entries, and the schema of the LLM's optional extras.

The counts are the truth the faithfulness guard checks reports against, so they come from the
entries' `type` and `actor` alone — never from model output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# Standard event type -> stats key (seed 000's stats example uses `enrolled`, `queries`).
TYPE_KEYS: dict[str, str] = {
    "enrollment": "enrolled",
    "ae": "ae",
    "sae": "sae",
    "deviation": "deviations",
    "query": "queries",
    "decision": "decisions",
    "message": "messages",
}
COUNT_KEYS = ("entries", "enrolled", "enrolled_total", "ae", "sae", "deviations", "queries", "decisions", "messages")
UNKNOWN_ACTOR = "(unknown)"


def _ranked(counter: Counter[str]) -> dict[str, int]:
    # Most frequent first, ties by name: stable JSON for equal inputs.
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def week_stats(entries: Iterable[Mapping[str, Any]], enrolled_before: int) -> dict[str, Any]:
    """Counts of one project-week; `enrolled_before` = enrolments of the project before this week."""
    types: Counter[str] = Counter()
    actors: Counter[str] = Counter()
    for entry in entries:
        types[str(entry["type"])] += 1
        actors[str(entry.get("actor") or UNKNOWN_ACTOR)] += 1
    stats: dict[str, Any] = {"entries": sum(types.values())}
    for type_, key in TYPE_KEYS.items():
        stats[key] = types[type_]
    stats["enrolled_total"] = enrolled_before + types["enrollment"]
    stats["by_type"] = _ranked(types)
    stats["by_actor"] = _ranked(actors)
    return {key: stats[key] for key in (*COUNT_KEYS, "by_type", "by_actor")}


class LLMWeekStats(BaseModel):
    """What the LLM may report in its trailing ```json block; every field optional, nothing else allowed.

    Stored in `llm_stats`, apart from the deterministic `stats`; counts that disagree with the
    deterministic ones flag the report for review.
    """

    model_config = ConfigDict(extra="forbid")

    enrolled: int | None = Field(default=None, ge=0)
    ae: int | None = Field(default=None, ge=0)
    sae: int | None = Field(default=None, ge=0)
    deviations: int | None = Field(default=None, ge=0)
    decisions: int | None = Field(default=None, ge=0)
    subjects: list[str] = Field(default_factory=list, max_length=50)
    """Subject ids the week's events concern."""
    risks: list[str] = Field(default_factory=list, max_length=10)
    """Short risk notes (e.g. a site paused)."""


def parse_llm_stats(data: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(validated extras, None) or (None, why they were refused)."""
    try:
        return LLMWeekStats.model_validate(data).model_dump(exclude_none=True), None
    except ValidationError as exc:
        return None, f"{exc.error_count()} validation error(s): {exc.errors()[0]['msg']}"

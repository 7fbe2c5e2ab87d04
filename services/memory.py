"""Python entry points over the memory store for other capabilities (`chronicle ask`, notebooks)."""

from __future__ import annotations

from chronicle.settings import Settings, get_settings
from storage.memory_schema import SearchHit
from storage.memory_store import MemoryStore, SearchMode


def search_memories(
    query: str,
    *,
    tags: list[str] | None = None,
    min_importance: float | None = None,
    target_file: str | None = None,
    limit: int = 10,
    mode: SearchMode = "hybrid",
    settings: Settings | None = None,
) -> list[SearchHit]:
    """Best distilled memories for `query` (score = semantic x 0.7 + importance x 0.3, seed 002).

    Filters apply before ranking: `tags` = any of, `min_importance` in [0, 1], `target_file` e.g. `USER.md`.
    An empty store returns `[]`.
    """
    return MemoryStore(settings or get_settings()).search(
        query, tags=tags, min_importance=min_importance, target_file=target_file, limit=limit, mode=mode
    )

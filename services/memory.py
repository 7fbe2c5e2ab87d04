"""Memory use cases: search, list, tags, reindex of the distilled store (the CLI and notebooks use these)."""

from __future__ import annotations

from datetime import date

from chronicle.param_checks import check_size
from chronicle.redaction.configured import redactor_for
from chronicle.settings import Settings
from chronicle.storage.memory.mentions import mentions, unknown_mentions
from chronicle.storage.memory.schema import SearchHit, StoredMemory
from chronicle.storage.memory.store import MemoryStore, SearchMode

MAX_QUERY_CHARS = 2_000
"""A query is a question, not a document: a longer one is refused before the redactor and the embedder read it (the
embedder keeps only its first few hundred tokens anyway), so no client — an assistant over MCP — holds a search
for the minutes a megabyte of text costs. `about` names a person: `MAX_NAME_CHARS`."""
MAX_NAME_CHARS = 200


def search_memories(settings: Settings, query: str, *, tags: list[str] | None = None,
                    min_importance: float | None = None, target_file: str | None = None, limit: int = 10,
                    mode: SearchMode = "hybrid", about: str | None = None, as_of: date | None = None,
                    include_mentions: bool = False) -> list[SearchHit]:
    """Best distilled memories for `query` (score = semantic x (0.7 + 0.3 x importance), seed 002 weights).

    Filters apply before ranking: `tags` = any of, `min_importance` in [0, 1], `target_file` e.g. `USER.md`.
    An empty store returns `[]`. The query is redacted first: it goes to the embeddings endpoint, and the
    memories it should find hold `[REDACTED:kind]` where the secret was. `about`: only memories about that
    person (never another subject's); `as_of`: what was current at the end of that day; `include_mentions`
    (with `about`): also memories whose person is unknown that name them.
    """
    check_size("query", len(query), MAX_QUERY_CHARS)
    check_size("about", len(about or ""), MAX_NAME_CHARS)
    query = redactor_for(settings).redact(query)
    store = MemoryStore(settings)
    options = {"tags": tags, "min_importance": min_importance, "target_file": target_file, "mode": mode,
               "as_of": as_of}
    hits = store.search(query, limit=limit, subject=about, **options)
    if about and include_mentions:
        unknown = store.search(query, limit=limit * 5, subject="", **options)
        hits += [h for h in unknown if mentions(about, h.content)]
        hits = sorted(hits, key=lambda h: -h.score)[:limit]
    return hits


def unknown_subject_mentions(settings: Settings, name: str) -> int:
    """How many memories whose person is unknown mention `name` (what `--about` leaves out)."""
    return unknown_mentions(MemoryStore(settings, allow_model_mismatch=True), name)


def list_memories(settings: Settings, *, limit: int = 50, tags: list[str] | None = None,
                  target_file: str | None = None) -> list[StoredMemory]:
    """Memories, newest first."""
    return MemoryStore(settings, allow_model_mismatch=True).list(limit=limit, tags=tags, target_file=target_file)


def tag_counts(settings: Settings) -> dict[str, int]:
    """Tags with the number of memories carrying each."""
    return MemoryStore(settings, allow_model_mismatch=True).tags()


def reindex(settings: Settings) -> int:
    """Re-embed every memory with the configured embedding model (after changing EMBEDDING_MODEL)."""
    return MemoryStore(settings, allow_model_mismatch=True).reindex()


def check_embedding_model(settings: Settings) -> None:
    """Raise `EmbeddingModelMismatch` (an `ActionNeeded`: "run `chronicle memory reindex`") when the stored vectors
    were made by another model than the configured one — before a distillation starts, not in its middle."""
    MemoryStore(settings)

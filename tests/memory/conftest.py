"""Memory-store fixtures: the packaged MiniLM loaded once per session, a store per test."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def embedder():
    """The real offline embedder (loading MiniLM takes a few seconds, so once per session)."""
    from chronicle.memory.embedder import LocalEmbedder
    from chronicle.settings import MINILM_EMBEDDING_MODEL, Settings

    # MiniLM, not the default: these tests' scores and thresholds are stated for it (the default model has
    # its own tests: dedup pairs, reindex, bench/embedders).
    return LocalEmbedder(Settings(home=Path("unused"), embedding_model=MINILM_EMBEDDING_MODEL))


@pytest.fixture()
def store(settings, embedder):
    from storage.memory_store import MemoryStore

    return MemoryStore(settings, embedder)


class HashEmbedder:
    """Deterministic pseudo-random unit vectors per text: a second "model" for mismatch/reindex/ANN tests."""

    def __init__(self, dim: int = 64, model_name: str | None = None) -> None:
        self.dim = dim
        self.model_name = model_name or f"hash-{dim}"

    def embed(self, texts: list[str]):
        import hashlib

        import numpy as np

        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows) if rows else np.zeros((0, self.dim), np.float32)

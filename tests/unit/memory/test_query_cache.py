"""The LRU of query vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from chronicle.memory import embedder as embedder_module
from chronicle.memory.embedder import RemoteEmbedder, query_vector
from chronicle.redaction.redactor import Redactor
from chronicle.settings import Settings


def test_query_vectors_of_a_local_model_are_cached_remote_ones_are_not(embedder, fake_llm, monkeypatch) -> None:
    monkeypatch.setattr(embedder_module, "QUERY_CACHE_SIZE", 4)
    text = Redactor.build().redact("a query asked twice (query cache test)")  # queries reach it redacted only
    first = query_vector(embedder, text)
    np.testing.assert_allclose(first, embedder.embed([text])[0], atol=1e-6)
    assert query_vector(embedder, text) is first
    assert not first.flags.writeable  # shared: nobody may change it in place
    for i in range(embedder_module.QUERY_CACHE_SIZE):
        query_vector(embedder, Redactor.build().redact(f"filler {i}"))
    assert query_vector(embedder, text) is not first  # least recently used went first
    remote = RemoteEmbedder(Settings(home=Path("unused"), embedding_url=fake_llm.base_url, embedding_model="fake"))
    before = fake_llm.calls("/v1/embeddings")
    query_vector(remote, Redactor.build().redact("same"))
    query_vector(remote, Redactor.build().redact("same"))
    assert fake_llm.calls("/v1/embeddings") - before == 2

"""The embedder and the memory store take only `Redacted` text (pure: no database, no model).

Python does not enforce annotations, so each sink checks at run time: a plain `str` raises `NotRedactedError`
before any model or endpoint sees it, and the error never quotes the text (it is the unredacted one).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chronicle.memory.embedder import RemoteEmbedder, embed_redacted, query_vector
from chronicle.memory.model import Memory
from chronicle.redaction.memories import redact_memory, require_redacted_memory
from chronicle.redaction.redactor import Redactor
from chronicle.redaction.text import NotRedactedError, Redacted, gate, require_redacted
from chronicle.settings import Settings

SECRET = "the password is Spl1tPw9Zz"


class CountingEmbedder:
    """Records what reaches the model: nothing must, for plain text."""

    model_name, dim = "counting", 4

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        return np.ones((len(texts), self.dim), np.float32) / 2


def test_plain_text_is_refused_and_the_error_does_not_quote_it() -> None:
    with pytest.raises(NotRedactedError) as refused:
        require_redacted([Redactor.build().redact("fine"), SECRET], "a sink")
    assert "Spl1tPw9Zz" not in str(refused.value) and "item 1 is a plain str" in str(refused.value)
    assert isinstance(refused.value, TypeError)  # a programming error, like any wrong argument type
    clean = Redactor.build().redact(SECRET)
    assert require_redacted([clean], "a sink") == [clean] and "Spl1tPw9Zz" not in clean


def test_the_embedder_takes_only_redacted_text() -> None:
    model = CountingEmbedder()
    with pytest.raises(NotRedactedError):
        embed_redacted(model, [SECRET])
    with pytest.raises(NotRedactedError):
        query_vector(model, SECRET)
    assert model.seen == []  # refused before the model saw anything
    redactor = Redactor.build()
    assert embed_redacted(model, redactor.redact_all([SECRET])).shape == (1, 4)
    query_vector(model, gate(SECRET, redactor))
    assert model.seen and not any("Spl1tPw9Zz" in t for t in model.seen)


def test_the_embeddings_endpoint_takes_only_redacted_text() -> None:
    # No server listens there: the check fails first, so not even a connection is tried.
    remote = RemoteEmbedder(Settings(home=Path("unused"), embedding_url="http://127.0.0.1:9/v1", embedding_model="x"))
    with pytest.raises(NotRedactedError):
        remote.embed([SECRET])


def test_the_memory_store_takes_only_memories_through_the_gate() -> None:
    raw = Memory(content=SECRET, summary=SECRET, key_info=["Spl1tPw9Zz"], tags=["pw"], importance=0.9,
                 targetFile="MEMORY.md", source="2026-03-02.md")
    with pytest.raises(NotRedactedError):
        require_redacted_memory(raw)
    gated = redact_memory(raw, Redactor.build())
    assert require_redacted_memory(gated) is gated
    assert all(isinstance(t, Redacted) for t in (gated.content, gated.summary, gated.source, *gated.key_info))
    assert "Spl1tPw9Zz" not in gated.content + gated.summary
    # Validating a pydantic model again drops the type: such a copy must go through the gate once more.
    with pytest.raises(NotRedactedError):
        require_redacted_memory(Memory.model_validate(gated.model_dump()))
    # A flag set after the gate keeps the redacted fields (`model_copy` does not re-validate).
    assert require_redacted_memory(gated.model_copy(update={"reads_as_order": True})).reads_as_order

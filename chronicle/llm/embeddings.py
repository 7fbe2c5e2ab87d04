"""Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint, batched, with the chat retry rules."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any

from chronicle.llm.attempts import Answer
from chronicle.llm.endpoint import EndpointClient
from chronicle.llm.errors import EMBEDDING_SERVICE, MalformedResponseError
from chronicle.llm.records import CallLogger, serialise_prompt
from chronicle.settings import Settings


class EmbeddingClient(EndpointClient):
    """Thread-safe; timeouts and retry/backoff come from the `llm_*` settings."""

    def __init__(
        self,
        settings: Settings,
        logger: CallLogger | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        *,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(settings, settings.embedding.url, settings.embedding.api_key, settings.embedding.model,
                         unset="EMBEDDING_URL is not set — no embeddings endpoint to call", logger=logger,
                         sleep=sleep, rng=rng)
        self.batch_size = max(1, settings.embedding.batch_size)

    def embed(self, texts: list[str], *, purpose: str = "embedding") -> list[list[float]]:
        """One vector per text, in input order; one request (with retries) per batch."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed_batch(texts[start : start + self.batch_size], purpose))
        return vectors

    def _embed_batch(self, batch: list[str], purpose: str) -> list[list[float]]:
        def send() -> Answer[list[list[float]]]:
            # "float" explicitly: the SDK may ask for base64, which several local servers do not implement.
            response = self._client.embeddings.create(model=self.model, input=batch, encoding_format="float")
            return _parse(response, len(batch))

        answer, _ = self._with_retries(send, service=EMBEDDING_SERVICE, purpose=purpose,
                                       prompt=serialise_prompt(batch))
        return answer.value


def _parse(response: Any, expected: int) -> Answer[list[list[float]]]:
    data = getattr(response, "data", None)
    if isinstance(response, str | bytes) or not isinstance(data, list) or len(data) != expected:
        got = len(data) if isinstance(data, list) else type(response).__name__
        raise MalformedResponseError(f"expected {expected} embeddings, got {got}")
    # Servers may answer out of order; `index` is the contract.
    ordered = sorted(data, key=lambda item: getattr(item, "index", 0) or 0)
    vectors = [list(getattr(item, "embedding", None) or []) for item in ordered]
    dims = {len(v) for v in vectors}
    if 0 in dims or len(dims) != 1 or not all(_finite(v) for v in vectors):
        raise MalformedResponseError("empty, ragged or non-numeric embedding vectors")
    usage = getattr(response, "usage", None)
    return Answer(
        value=vectors,
        response=f"{len(vectors)} vectors of dimension {dims.pop()}",
        tokens_in=getattr(usage, "prompt_tokens", None),
        tokens_out=None,
        model=getattr(response, "model", None) or None,
    )


def _finite(vector: list[Any]) -> bool:
    return all(isinstance(x, int | float) and math.isfinite(x) for x in vector)

"""OpenAI-compatible chat and embeddings clients with one retry layer and a per-attempt call log."""

from chronicle.llm.client import ChatClient, ChatResult
from chronicle.llm.embeddings import EmbeddingClient
from chronicle.llm.endpoint import base_url
from chronicle.llm.errors import (
    LLMError,
    LLMUnavailableError,
    MalformedResponseError,
    PermanentLLMError,
    TransientLLMError,
)
from chronicle.llm.records import CallLogger, ListLogger, LLMCallRecord
from chronicle.llm.retry import backoff_delay, classify, retry_after_seconds

__all__ = [
    "CallLogger",
    "ChatClient",
    "ChatResult",
    "EmbeddingClient",
    "LLMCallRecord",
    "LLMError",
    "LLMUnavailableError",
    "ListLogger",
    "MalformedResponseError",
    "PermanentLLMError",
    "TransientLLMError",
    "backoff_delay",
    "base_url",
    "classify",
    "retry_after_seconds",
]

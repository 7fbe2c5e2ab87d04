"""The shape of an LLM call as the pure engines see it (the services' LLM gate provides it)."""

from __future__ import annotations

from collections.abc import Callable

LLMCall = Callable[..., str]
"""`call(messages, purpose, **options) -> text`: one chat completion (options such as `max_tokens` or
`response_format` go to the endpoint); raises the `chronicle.llm` errors. Engines take it injected, so
they stay pure and the gate decides slots, retries and logging."""

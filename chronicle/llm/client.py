"""Chat completions against any OpenAI-compatible endpoint, with our own retry loop and call log."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chronicle.llm.attempts import Answer, CallSpec, RetryPolicy, run_with_retries
from chronicle.llm.endpoint import base_url, openai_client
from chronicle.llm.errors import LLM_SERVICE, MalformedResponseError, PermanentLLMError
from chronicle.llm.records import CallLogger, serialise_prompt
from chronicle.settings import Settings


@dataclass(frozen=True)
class ChatResult:
    """A successful completion.

    Token counts are None when the endpoint reported no usage; `latency_ms` is the whole call's wall time,
    retries and backoff included (each attempt's own latency is in its `LLMCallRecord`).
    """

    text: str
    model: str
    tokens_in: int | None
    tokens_out: int | None
    latency_ms: int
    attempts: int


class ChatClient:
    """Thread-safe chat client; share one instance across threads."""

    def __init__(
        self,
        settings: Settings,
        logger: CallLogger | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        *,
        rng: random.Random | None = None,
    ) -> None:
        if not settings.llm_url:
            raise PermanentLLMError("LLM_URL is not set — no chat endpoint to call")
        self.endpoint = base_url(settings.llm_url)
        self.model = settings.llm_model
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
        self._secrets = (key,) if key else ()
        self._policy = RetryPolicy.from_settings(settings)
        self._logger = logger
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._client = openai_client(self.endpoint, key, settings.llm_timeout_s)

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        project_id: str | None = None,
        week_number: int | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> ChatResult:
        """One chat completion; `PermanentLLMError` at once, `LLMUnavailableError` once retries run out."""
        extra: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
        t0 = time.perf_counter()

        def send() -> Answer[str]:
            response = self._client.chat.completions.create(
                model=self.model, messages=messages, temperature=temperature, **extra
            )
            return _parse(response)

        spec = CallSpec(
            service=LLM_SERVICE,
            endpoint=self.endpoint,
            model=self.model,
            purpose=purpose,
            prompt=serialise_prompt(messages),
            project_id=project_id,
            week_number=week_number,
            secrets=self._secrets,
        )
        answer, attempts = run_with_retries(
            send, spec, policy=self._policy, logger=self._logger, sleep=self._sleep, rng=self._rng
        )
        return ChatResult(
            text=answer.value,
            model=answer.model or self.model,
            tokens_in=answer.tokens_in,
            tokens_out=answer.tokens_out,
            latency_ms=round((time.perf_counter() - t0) * 1000),
            attempts=attempts,
        )


def _parse(response: Any) -> Answer[str]:
    # Without a JSON content type the SDK hands back the raw text instead of a ChatCompletion.
    if isinstance(response, str | bytes) or not hasattr(response, "choices"):
        raise MalformedResponseError(f"not a chat completion: {str(response)[:80]!r}")
    choices = response.choices or []
    message = getattr(choices[0], "message", None) if choices else None
    text = getattr(message, "content", None)
    if not isinstance(text, str) or not text.strip():
        raise MalformedResponseError("empty message content")
    usage = getattr(response, "usage", None)
    return Answer(
        value=text,
        response=text,
        tokens_in=getattr(usage, "prompt_tokens", None),
        tokens_out=getattr(usage, "completion_tokens", None),
        model=getattr(response, "model", None) or None,
    )

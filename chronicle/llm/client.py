"""Chat completions against any OpenAI-compatible endpoint, with our own retry loop and call log."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from chronicle.llm.attempts import Answer
from chronicle.llm.capabilities import probing, remember_structured_output, structured_output
from chronicle.llm.endpoint import EndpointClient
from chronicle.llm.errors import LLM_SERVICE, MalformedResponseError, PermanentLLMError
from chronicle.llm.reasoning import strip_reasoning
from chronicle.llm.records import CallLogger, serialise_prompt
from chronicle.settings import Settings

_log = logging.getLogger(__name__)
# Statuses with which endpoints refuse a `response_format` they do not support.
_UNSUPPORTED_FORMAT = (400, 422, 501)


@dataclass(frozen=True)
class ChatResult:
    """A successful completion: the answer, with any reasoning (`<think>`, `reasoning_content`) removed.

    Token counts are None when the endpoint reported no usage (`tokens_out` includes reasoning tokens);
    `latency_ms` is the whole call's wall time, retries and backoff included (each attempt's own latency is
    in its `LLMCallRecord`). `structured` says whether the answer was asked for as schema-bound JSON.
    """

    text: str
    model: str
    tokens_in: int | None
    tokens_out: int | None
    latency_ms: int
    attempts: int
    structured: bool = False


class ChatClient(EndpointClient):
    """Thread-safe chat client; share one instance across threads."""

    def __init__(
        self,
        settings: Settings,
        logger: CallLogger | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        *,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(settings, settings.llm.url, settings.llm.api_key, settings.llm.model,
                         unset="LLM_URL is not set — no chat endpoint to call", logger=logger, sleep=sleep, rng=rng)

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        project_id: str | None = None,
        week_number: int | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        """One chat completion; `PermanentLLMError` at once, `LLMUnavailableError` once retries run out.

        With `json_schema` (`{"name": ..., "schema": {...}}`) the answer is asked for as structured output
        where the endpoint supports it; an endpoint that refuses it is asked again in plain text, and that is
        remembered for the endpoint and model (`chronicle.llm.capabilities`), so it costs one request once.
        """
        kwargs = {"purpose": purpose, "project_id": project_id, "week_number": week_number,
                  "max_tokens": max_tokens, "temperature": temperature}
        if json_schema is None:
            return self._complete(messages, **kwargs)
        if structured_output(self.endpoint, self.model) is None:
            with probing(self.endpoint, self.model):
                if structured_output(self.endpoint, self.model) is None:
                    return self._structured(messages, json_schema, kwargs)
        if structured_output(self.endpoint, self.model) is False:
            return self._complete(messages, **kwargs)
        return self._structured(messages, json_schema, kwargs)

    def _structured(self, messages: list[dict[str, Any]], json_schema: dict[str, Any],
                    kwargs: dict[str, Any]) -> ChatResult:
        """Ask with `response_format`; on a refusal ask again in plain text and remember the endpoint's answer."""
        response_format = {"type": "json_schema", "json_schema": {**json_schema, "strict": False}}
        try:
            result = self._complete(messages, response_format=response_format, **kwargs)
        except PermanentLLMError as exc:
            if exc.http_status not in _UNSUPPORTED_FORMAT:
                raise
            result = self._complete(messages, **kwargs)  # still failing: the request itself was bad
            remember_structured_output(self.endpoint, self.model, False)
            _log.warning("%s (%s) refused structured output (%s); using plain JSON replies from now on",
                         self.endpoint, self.model, exc.message[:200])
            return result
        remember_structured_output(self.endpoint, self.model, True)
        return replace(result, structured=True)

    def _complete(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        project_id: str | None,
        week_number: int | None,
        max_tokens: int | None,
        temperature: float,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResult:
        body = _chat_body(self.model, messages, temperature, max_tokens=max_tokens, response_format=response_format)
        t0 = time.perf_counter()

        def send() -> Answer[str]:
            return _parse(self._post_chat(body))

        answer, attempts = self._with_retries(send, service=LLM_SERVICE, purpose=purpose,
                                              prompt=serialise_prompt(messages), project_id=project_id,
                                              week_number=week_number)
        return ChatResult(
            text=answer.value,
            model=answer.model or self.model,
            tokens_in=answer.tokens_in,
            tokens_out=answer.tokens_out,
            latency_ms=round((time.perf_counter() - t0) * 1000),
            attempts=attempts,
        )

    def _post_chat(self, body: dict[str, Any]) -> Any:
        """POST the request as `chat.completions.create` does, without its transform of the typed arguments: that
        walks every message against the SDK's TypedDicts (~0.5 ms a call, uncached) to rename aliased keys and
        format dates and files, none of which a request of ours has (tests/unit/llm/test_client.py holds that).
        The answer comes back as its JSON (`cast_to=object`), not built into the SDK's `ChatCompletion` (~0.25 ms
        a call for the few fields `_parse` reads); errors are the SDK's as before, raised from the status."""
        return self._client.post("/chat/completions", body=body, cast_to=object,
                                 options={"security": {"bearer_auth": True}})


def _chat_body(model: str, messages: list[dict[str, Any]], temperature: float, *, max_tokens: int | None,
              response_format: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON of a chat completion request, as `chat.completions.create` sends it for these arguments (its
    keys in its order: the same bytes on the wire)."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if response_format is not None:
        body["response_format"] = response_format
    body["temperature"] = temperature
    return body


def _parse(response: Any) -> Answer[str]:
    data = response
    if isinstance(data, str | bytes):
        # Without a JSON content type the SDK hands back the body's text; it may still be a completion (the SDK's
        # `ChatCompletion` was built from such a body too).
        try:
            data = json.loads(data)
        except ValueError:
            data = None
    if not isinstance(data, dict) or "choices" not in data:
        raise MalformedResponseError(f"not a chat completion: {str(response)[:80]!r}")
    choices = data["choices"] if isinstance(data["choices"], list) else []
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str) or not content.strip():
        raise MalformedResponseError("empty message content")
    # `reasoning_content` (DeepSeek, vLLM's reasoning parser) is never read; inline <think> is cut off here.
    text, thinking = strip_reasoning(content)
    if not text:
        raise MalformedResponseError(f"only reasoning ({len(thinking)} chars), no answer")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Answer(
        value=text,
        response=text,
        tokens_in=usage.get("prompt_tokens"),
        tokens_out=usage.get("completion_tokens"),
        model=data.get("model") or None,
    )

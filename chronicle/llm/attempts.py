"""The one retry loop shared by chat and embeddings: attempt, log, classify, back off."""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from chronicle.llm.errors import (
    LLMError,
    LLMUnavailableError,
    PermanentLLMError,
    Service,
    rejection_message,
    sanitise,
)
from chronicle.llm.records import CallLogger, LLMCallRecord, prompt_hash, scrub
from chronicle.llm.retry import backoff_delay, classify, headers_of, http_status_of, retry_after_seconds

T = TypeVar("T")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int
    base_s: float
    cap_s: float

    @classmethod
    def from_settings(cls, settings: Any) -> RetryPolicy:
        return cls(
            max(1, int(settings.llm.max_attempts)), settings.llm.backoff_base_s, settings.llm.backoff_max_s
        )


@dataclass(frozen=True)
class CallSpec:
    """Everything about one logical call that every attempt's record repeats."""

    service: Service
    endpoint: str
    model: str
    purpose: str
    prompt: str
    project_id: str | None = None
    week_number: int | None = None
    secrets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Answer(Generic[T]):
    """A successful attempt: the parsed value plus what goes into its record."""

    value: T
    response: str | None
    tokens_in: int | None
    tokens_out: int | None
    model: str | None = None


def run_with_retries(
    send: Callable[[], Answer[T]],
    spec: CallSpec,
    *,
    policy: RetryPolicy,
    logger: CallLogger | None,
    sleep: Callable[[float], Any],
    rng: random.Random,
) -> tuple[Answer[T], int]:
    """Call `send` until it succeeds, fails permanently or attempts run out; returns (answer, attempts)."""
    call_id = str(uuid.uuid4())
    digest = prompt_hash(spec.prompt)
    last: BaseException | None = None
    for attempt in range(1, policy.max_attempts + 1):
        started = datetime.now(UTC)
        t0 = time.perf_counter()
        try:
            answer = send()
        except Exception as exc:
            error, status = _describe(exc, spec), http_status_of(exc)
            _emit(logger, spec, call_id, digest, started, attempt, _ms(t0), None, status, error)
            if classify(exc) == "permanent":
                if isinstance(exc, PermanentLLMError):
                    raise
                raise _permanent(exc, spec) from exc
            last = exc
            if attempt < policy.max_attempts:
                wait = backoff_delay(attempt, policy.base_s, policy.cap_s, rng)
                sleep(max(retry_after_seconds(headers_of(exc)) or 0.0, wait))
            continue
        _emit(logger, spec, call_id, digest, started, attempt, _ms(t0), answer, 200, None)
        return answer, attempt
    assert last is not None  # max_attempts >= 1, so the loop ran and failed
    raise LLMUnavailableError(
        attempts=policy.max_attempts,
        last_error=_describe(last, spec),
        endpoint=spec.endpoint,
        http_status=http_status_of(last),
        label=spec.service.label,
    ) from last


def _ms(t0: float) -> int:
    return round((time.perf_counter() - t0) * 1000)


def _emit(
    logger: CallLogger | None,
    spec: CallSpec,
    call_id: str,
    digest: str,
    started: datetime,
    attempt: int,
    latency_ms: int,
    answer: Answer[Any] | None,
    http_status: int | None,
    error: str | None,
) -> None:
    if logger is None:
        return
    record = LLMCallRecord(
        call_id=call_id,
        started_at=started,
        model=(answer.model if answer and answer.model else spec.model),
        endpoint=spec.endpoint,
        purpose=spec.purpose,
        project_id=spec.project_id,
        week_number=spec.week_number,
        prompt_hash=digest,
        prompt=spec.prompt,
        response=scrub(answer.response, spec.secrets) if answer else None,
        tokens_in=answer.tokens_in if answer else None,
        tokens_out=answer.tokens_out if answer else None,
        latency_ms=latency_ms,
        status="ok" if answer else "error",
        error=error,
        http_status=http_status,
        attempt=attempt,
    )
    try:
        logger.log(record)
    except Exception:
        # The audit trail must not turn a paid-for, successful LLM answer into a failed call.
        _log.exception("LLM call logger failed; record %s attempt %d dropped", call_id, attempt)


def _detail(exc: BaseException) -> str:
    import openai  # not at module level: an offline run never loads the SDK (see `retry.classify`)

    if isinstance(exc, LLMError):
        return exc.message
    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else inner
            if message:
                return str(message)
        return exc.message
    return str(exc) or type(exc).__name__


def _describe(exc: BaseException, spec: CallSpec) -> str:
    status = http_status_of(exc)
    prefix = type(exc).__name__ + (f" (HTTP {status})" if status is not None else "")
    return sanitise(f"{prefix}: {_detail(exc)}"[:500], spec.secrets) or prefix


def _permanent(exc: BaseException, spec: CallSpec) -> PermanentLLMError:
    status = http_status_of(exc)
    # Without an HTTP status the exception type is the only clue (e.g. a bad header value).
    detail = f"{type(exc).__name__}: {_detail(exc)}" if status is None else _detail(exc)
    message = rejection_message(
        status,
        service=spec.service,
        endpoint=spec.endpoint,
        model=spec.model,
        detail=sanitise(detail, spec.secrets) or "",
    )
    return PermanentLLMError(message, endpoint=spec.endpoint, http_status=status)

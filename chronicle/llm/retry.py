"""Pure retry policy: which failures to retry and how long to wait between attempts."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Literal

from chronicle.llm.errors import PermanentLLMError, TransientLLMError

Kind = Literal["transient", "permanent"]

RETRY_AFTER_CAP_S = 120.0
"""A server asking for a longer pause is treated as down for this call rather than waited on for hours."""

# 408 timeout, 409 lock conflict and 425 too-early clear up by themselves, like 429 and 5xx.
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Full-jitter backoff after failed `attempt` (1-based): uniform(0, min(cap, base * 2**(attempt-1)))."""
    exponent = min(max(attempt, 1) - 1, 62)  # beyond this the cap wins anyway; avoids float overflow
    ceiling = min(max(cap, 0.0), max(base, 0.0) * (2.0**exponent))
    return (rng or random).uniform(0.0, ceiling)


def retry_after_seconds(headers: Mapping[str, str] | None, *, now: datetime | None = None) -> float | None:
    """Seconds a server asked us to wait (`Retry-After-Ms`, `Retry-After` seconds or HTTP-date), capped."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            seconds = float(value.strip()) / divisor
        except ValueError:
            continue
        if math.isnan(seconds):
            return None
        return _clamp(seconds)
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        when = when.replace(tzinfo=UTC)
    return _clamp((when - (now or datetime.now(UTC))).total_seconds())


def _clamp(seconds: float) -> float:
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)


def classify_status(status: int) -> Kind:
    """HTTP status → retry kind: 429, 5xx and a few self-healing 4xx are transient; other codes are not."""
    return "transient" if status >= 500 or status in _TRANSIENT_STATUSES else "permanent"


def classify(exc: BaseException) -> Kind:
    """Whether another attempt might succeed after `exc` (an openai, transport or parsing error)."""
    # Imported here, not at module level: an offline flow run (a backfill child) never calls an endpoint,
    # and the SDK is ~0.3 s of every fresh worker process's start-up.
    import httpx2
    import openai

    if isinstance(exc, TransientLLMError):
        return "transient"
    if isinstance(exc, PermanentLLMError):
        return "permanent"
    # APITimeoutError subclasses APIConnectionError; resets and refused connections land here too.
    if isinstance(exc, openai.APIConnectionError | openai.APIResponseValidationError):
        return "transient"
    if isinstance(exc, openai.APIStatusError):
        return classify_status(exc.status_code)
    # A truncated or non-JSON body surfaces as a decode error from the SDK's response.json().
    if isinstance(exc, json.JSONDecodeError | httpx2.TransportError | ConnectionError | TimeoutError):
        return "transient"
    return "permanent"


def http_status_of(exc: BaseException) -> int | None:
    """The HTTP status behind `exc`, if a response was received."""
    import openai  # not at module level: see `classify`

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code
    if isinstance(exc, openai.APIResponseValidationError):
        return exc.response.status_code
    if isinstance(exc, TransientLLMError | PermanentLLMError):
        return exc.http_status
    return None


def headers_of(exc: BaseException) -> Mapping[str, str] | None:
    """Response headers behind `exc` (for `Retry-After`), if any."""
    response = getattr(exc, "response", None)
    return getattr(response, "headers", None)

"""Pure policy: URL normalisation, backoff, Retry-After parsing, error classification and messages."""

from __future__ import annotations

import json
import pickle
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx2
import openai
import pytest

from chronicle.llm import (
    LLMUnavailableError,
    MalformedResponseError,
    PermanentLLMError,
    TransientLLMError,
    backoff_delay,
    base_url,
    classify,
    retry_after_seconds,
)
from chronicle.llm.retry import RETRY_AFTER_CAP_S, http_status_of

REQUEST = httpx2.Request("POST", "http://h:11434/v1/chat/completions")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h:11434/v1", "http://h:11434/v1"),
        ("http://h:11434/v1/", "http://h:11434/v1"),
        ("http://h:11434/v1/chat/completions", "http://h:11434/v1"),
        ("http://h:11434/v1/chat/completions/", "http://h:11434/v1"),
        ("http://h:11434/v1/embeddings", "http://h:11434/v1"),
        ("http://h:11434/chat/completions", "http://h:11434/v1"),
        ("http://h:11434", "http://h:11434/v1"),
        ("  https://gw.example.com/openai/v1/chat/completions?x=1 ", "https://gw.example.com/openai/v1"),
        ("https://api.example.com/api/v3/", "https://api.example.com/api/v3"),
    ],
)
def test_base_url(url: str, expected: str) -> None:
    assert base_url(url) == expected


@pytest.mark.parametrize("url", ["", "h:11434/v1", "ftp://h/v1", "not a url"])
def test_base_url_rejects_non_http(url: str) -> None:
    with pytest.raises(ValueError):
        base_url(url)


def test_backoff_is_full_jitter_exponential_and_capped() -> None:
    rng = random.Random(42)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 10.0), (500, 10.0)]:
        samples = [backoff_delay(attempt, 1.0, 10.0, rng) for _ in range(300)]
        assert all(0.0 <= s <= ceiling for s in samples)
        assert max(samples) > ceiling * 0.8  # jitter spans the whole range, not just its top
        assert min(samples) < ceiling * 0.2


def test_backoff_is_reproducible_with_a_seeded_rng() -> None:
    first = [backoff_delay(n, 0.5, 30.0, random.Random(3)) for n in range(1, 6)]
    assert first == [backoff_delay(n, 0.5, 30.0, random.Random(3)) for n in range(1, 6)]
    assert backoff_delay(3, 0.0, 30.0) == 0.0


NOW = datetime(2025, 3, 10, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (None, None),
        ({}, None),
        ({"Retry-After": "1"}, 1.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"Retry-After-Ms": "1500"}, 1.5),
        ({"Retry-After": "-3"}, 0.0),
        ({"Retry-After": "3600"}, RETRY_AFTER_CAP_S),
        ({"Retry-After": format_datetime(NOW + timedelta(seconds=30), usegmt=True)}, 30.0),
        ({"Retry-After": format_datetime(NOW - timedelta(seconds=30), usegmt=True)}, 0.0),
        ({"Retry-After": format_datetime(NOW + timedelta(hours=2), usegmt=True)}, RETRY_AFTER_CAP_S),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "nan"}, None),
    ],
)
def test_retry_after_seconds(headers: dict[str, str] | None, expected: float | None) -> None:
    assert retry_after_seconds(headers, now=NOW) == expected


def test_retry_after_reads_httpx_headers() -> None:
    assert retry_after_seconds(httpx2.Headers({"Retry-After": "7"})) == 7.0


def status_error(status: int) -> openai.APIStatusError:
    response = httpx2.Response(status, request=REQUEST, json={"error": {"message": "nope"}})
    client = openai.OpenAI(api_key="x", base_url="http://h/v1")
    return client._make_status_error_from_response(response)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "permanent"),
        (401, "permanent"),
        (403, "permanent"),
        (404, "permanent"),
        (422, "permanent"),
        (408, "transient"),
        (409, "transient"),
        (429, "transient"),
        (500, "transient"),
        (502, "transient"),
        (503, "transient"),
        (504, "transient"),
    ],
)
def test_classify_status_errors(status: int, kind: str) -> None:
    exc = status_error(status)
    assert classify(exc) == kind
    assert http_status_of(exc) == status


def test_status_error_subclasses_are_what_the_sdk_raises() -> None:
    assert isinstance(status_error(429), openai.RateLimitError)
    assert isinstance(status_error(500), openai.InternalServerError)
    assert isinstance(status_error(401), openai.AuthenticationError)


@pytest.mark.parametrize(
    "exc",
    [
        openai.APITimeoutError(request=REQUEST),
        openai.APIConnectionError(request=REQUEST),
        openai.APIResponseValidationError(httpx2.Response(200, request=REQUEST), body="x"),
        json.JSONDecodeError("Expecting value", "", 0),
        httpx2.RemoteProtocolError("Server disconnected"),
        ConnectionResetError(104, "Connection reset by peer"),
        TransientLLMError("x"),
        MalformedResponseError("empty message content"),
        LLMUnavailableError(attempts=3, last_error="x", endpoint="http://h/v1"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_classify_transient(exc: BaseException) -> None:
    assert classify(exc) == "transient"


@pytest.mark.parametrize(
    "exc",
    [PermanentLLMError("x"), openai.OpenAIError("no key"), TypeError("bug"), KeyError("model")],
    ids=lambda e: type(e).__name__,
)
def test_classify_permanent(exc: BaseException) -> None:
    assert classify(exc) == "permanent"


def test_unavailable_message_names_attempts_error_and_endpoint() -> None:
    exc = LLMUnavailableError(
        attempts=5, last_error="InternalServerError (HTTP 500): boom", endpoint="http://h/v1"
    )
    assert isinstance(exc, TransientLLMError)
    assert "5 attempts" in str(exc) and "boom" in str(exc) and "http://h/v1" in str(exc)
    assert exc.attempts == 5 and exc.endpoint == "http://h/v1"
    assert "1 attempt;" in str(LLMUnavailableError(attempts=1, last_error="e", endpoint="http://h/v1"))


@pytest.mark.parametrize(
    "exc",
    [
        LLMUnavailableError(attempts=2, last_error="boom", endpoint="http://h/v1", http_status=503),
        PermanentLLMError("rejected", endpoint="http://h/v1", http_status=401),
        MalformedResponseError("empty message content"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_survive_pickling(exc: Exception) -> None:
    # Prefect pickles exceptions raised inside tasks.
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is type(exc) and str(copy) == str(exc)
    assert copy.__dict__ == exc.__dict__

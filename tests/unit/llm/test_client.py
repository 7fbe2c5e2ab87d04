"""ChatClient and EmbeddingClient against the real openai SDK talking HTTP to FakeLLMServer."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from chronicle.llm import (
    ChatClient,
    EmbeddingClient,
    ListLogger,
    LLMUnavailableError,
    PermanentLLMError,
)
from chronicle.settings import Settings
from tests.fakellm import FakeLLMServer, Reply, default_responder

pytestmark = pytest.mark.timeout(60)

USER = [
    {"role": "system", "content": "You write weekly reports."},
    {"role": "user", "content": "Week 12: ok"},
]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


class Sleeps(list[float]):
    """Records requested sleeps instead of sleeping, so backoff tests stay fast."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make_settings(url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "llm_url": url,
        "llm_model": "test-model",
        "llm_timeout_s": 5.0,
        "llm_max_attempts": 4,
        "llm_backoff_base_s": 0.01,
        "llm_backoff_max_s": 0.05,
    }
    values.update(overrides)
    return Settings(**values)


def make_client(server: FakeLLMServer, **overrides: Any) -> tuple[ChatClient, ListLogger, Sleeps]:
    logger, sleeps = ListLogger(), Sleeps()
    return ChatClient(make_settings(server.base_url, **overrides), logger, sleep=sleeps), logger, sleeps


def test_normal_reply_returns_text_usage_and_one_record(server: FakeLLMServer) -> None:
    client, logger, sleeps = make_client(server)
    result = client.complete(
        USER, purpose="weekly_report", project_id="XH305", week_number=12, max_tokens=300
    )

    assert result.text == default_responder({"messages": USER})
    assert result.attempts == 1
    assert result.model == "test-model"
    assert result.tokens_in == len("You write weekly reports.Week 12: ok") // 4
    assert result.tokens_out == len(result.text) // 4
    body = server.requests[0].json
    assert body["model"] == "test-model" and body["temperature"] == 0.0 and body["max_tokens"] == 300
    assert sleeps == []
    [record] = logger.records
    assert (record.status, record.attempt, record.http_status, record.error) == ("ok", 1, 200, None)
    assert (record.purpose, record.project_id, record.week_number) == ("weekly_report", "XH305", 12)
    assert record.endpoint == server.base_url
    assert record.response == result.text
    assert record.prompt_hash == hashlib.sha256(record.prompt.encode()).hexdigest()
    assert "Week 12: ok" in record.prompt
    assert record.started_at.tzinfo is not None


@pytest.mark.parametrize("form", ["base", "base/", "chat", "chat/", "embeddings"])
def test_base_and_full_url_forms_reach_the_chat_endpoint(server: FakeLLMServer, form: str) -> None:
    url = {
        "base": server.base_url,
        "base/": server.base_url + "/",
        "chat": server.chat_url,
        "chat/": server.chat_url + "/",
        "embeddings": server.embeddings_url,
    }[form]
    client = ChatClient(make_settings(url))
    assert client.complete(USER, purpose="t").text
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]


def test_429_retry_after_is_honoured(server: FakeLLMServer) -> None:
    server.enqueue(Reply(status=429, headers={"Retry-After": "1"}))
    client, logger, sleeps = make_client(server)
    result = client.complete(USER, purpose="t")
    assert result.attempts == 2
    assert len(sleeps) == 1 and sleeps[0] >= 1.0
    first, second = logger.records
    assert (first.status, first.http_status, first.attempt) == ("error", 429, 1)
    assert (second.status, second.attempt) == ("ok", 2)
    assert first.call_id == second.call_id


def test_500_then_success(server: FakeLLMServer) -> None:
    server.enqueue(Reply(status=500))
    client, logger, sleeps = make_client(server)
    assert client.complete(USER, purpose="t").attempts == 2
    assert [r.status for r in logger.records] == ["error", "ok"]
    assert logger.records[0].http_status == 500
    assert len(sleeps) == 1 and 0.0 <= sleeps[0] <= 0.05


def test_timeout_then_success(server: FakeLLMServer) -> None:
    server.enqueue(Reply(delay_s=2.0))
    client, logger, _ = make_client(server, llm_timeout_s=0.5)
    assert client.complete(USER, purpose="t").attempts == 2
    first = logger.records[0]
    assert first.status == "error" and first.http_status is None and "Timeout" in (first.error or "")
    assert first.latency_ms >= 400


@pytest.mark.parametrize(
    "reply",
    [
        Reply(raw_body=b"<html>502 Bad Gateway</html>"),
        Reply(raw_body=b'{"choices": ['),
        Reply(raw_body=b"plain text", headers={"Content-Type": "text/plain"}),
        Reply(raw_body=b'{"id": "x", "object": "chat.completion", "choices": []}'),
        Reply(content=""),
    ],
    ids=["html", "truncated-json", "text-plain", "no-choices", "empty-content"],
)
def test_malformed_body_then_success(server: FakeLLMServer, reply: Reply) -> None:
    server.enqueue(reply)
    client, logger, _ = make_client(server)
    assert client.complete(USER, purpose="t").attempts == 2
    assert [r.status for r in logger.records] == ["error", "ok"]


def test_the_answer_is_read_from_the_completion_json_whatever_its_content_type(server: FakeLLMServer) -> None:
    """The answer, its token counts and model come from the body's JSON, also when the endpoint labels it as plain
    text (the SDK's `ChatCompletion` was built from such a body too)."""
    body = {"id": "x", "object": "chat.completion", "model": "served-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "<think>hm</think>Fine."}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}
    server.enqueue(Reply(raw_body=json.dumps(body).encode(), headers={"Content-Type": "text/plain"}))
    server.enqueue(Reply(raw_body=json.dumps({**body, "usage": None, "model": ""}).encode()))
    client, logger, _ = make_client(server)
    first, second = client.complete(USER, purpose="t"), client.complete(USER, purpose="t")
    assert (first.text, first.tokens_in, first.tokens_out, first.model, first.attempts) == ("Fine.", 11, 3,
                                                                                           "served-model", 1)
    assert (second.text, second.tokens_in, second.tokens_out, second.model) == ("Fine.", None, None, "test-model")
    assert [r.status for r in logger.records] == ["ok", "ok"]


@pytest.mark.parametrize(
    ("status", "hints"),
    [
        (401, ["401", "API key", "LLM_API_KEY"]),
        (403, ["403", "LLM_API_KEY"]),
        (404, ["404", "LLM_URL", "test-model"]),
    ],
)
def test_client_errors_fail_at_once_with_a_clear_message(
    server: FakeLLMServer, status: int, hints: list[str]
) -> None:
    server.enqueue(Reply(status=status))
    client, logger, sleeps = make_client(server)
    with pytest.raises(PermanentLLMError) as caught:
        client.complete(USER, purpose="t")
    assert server.calls() == 1
    assert sleeps == []
    assert caught.value.http_status == status
    message = str(caught.value)
    assert server.base_url in message
    for hint in hints:
        assert hint in message
    [record] = logger.records
    assert record.status == "error" and record.http_status == status


@pytest.mark.parametrize("kind", ["500", "429", "malformed", "reset", "timeout"])
def test_fully_down_raises_unavailable_after_max_attempts(server: FakeLLMServer, kind: str) -> None:
    server.set_faults(rate=1.0, kinds=(kind,), timeout_sleep_s=1.0)
    client, logger, sleeps = make_client(server, llm_max_attempts=3, llm_timeout_s=0.3)
    with pytest.raises(LLMUnavailableError) as caught:
        client.complete(USER, purpose="t")
    assert server.calls() == 3
    assert len(sleeps) == 2  # no pointless sleep after the last attempt
    assert [r.attempt for r in logger.records] == [1, 2, 3]
    assert all(r.status == "error" for r in logger.records)
    message = str(caught.value)
    assert "3 attempts" in message and server.base_url in message and "last error" in message


def test_thirty_percent_faults_over_forty_calls_all_succeed(server: FakeLLMServer) -> None:
    server.set_faults(rate=0.3, kinds=("429", "500", "502", "malformed", "reset"), seed=1)
    client, logger, _ = make_client(server, llm_max_attempts=8)
    for i in range(40):
        prompt = [{"role": "user", "content": f"call {i}"}]
        assert client.complete(prompt, purpose="t").text == default_responder({"messages": prompt})
    assert server.calls() > 40  # faults really happened
    assert len(logger.records) == server.calls()
    assert sum(r.status == "ok" for r in logger.records) == 40


def test_api_key_is_sent_as_bearer_but_never_logged(server: FakeLLMServer) -> None:
    key = "sk-test-SECRET-1234567890"
    # Some servers echo the key in error bodies; the record must not carry it.
    server.enqueue(Reply(status=500, content=f"upstream refused key {key}"))
    client, logger, _ = make_client(server, llm_api_key=key)
    client.complete(USER, purpose="t")
    assert all(r.headers["authorization"] == f"Bearer {key}" for r in server.requests)
    assert len(logger.records) == 2
    for record in logger.records:
        assert key not in repr(record)
        assert all(key not in str(value) for value in dataclasses.asdict(record).values())


def test_key_echoed_in_a_permanent_error_is_masked(server: FakeLLMServer) -> None:
    key = "sk-test-ECHOED-0987654321"
    server.enqueue(Reply(status=401, content=f"Incorrect API key provided: {key}"))
    client, logger, _ = make_client(server, llm_api_key=key)
    with pytest.raises(PermanentLLMError) as caught:
        client.complete(USER, purpose="t")
    assert key not in str(caught.value)
    assert key not in repr(logger.records)


def test_no_key_sends_placeholder(server: FakeLLMServer) -> None:
    client, _, _ = make_client(server)
    client.complete(USER, purpose="t")
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_concurrent_calls_from_eight_threads(server: FakeLLMServer) -> None:
    server.set_faults(rate=0.2, kinds=("500", "429"), seed=7)
    client, logger, _ = make_client(server, llm_max_attempts=10)
    results: dict[tuple[int, int], str] = {}
    errors: list[BaseException] = []

    def worker(thread: int) -> None:
        try:
            for n in range(5):
                prompt = [{"role": "user", "content": f"thread {thread} call {n}"}]
                results[(thread, n)] = client.complete(prompt, purpose="t").text
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert len(results) == 40
    for (thread, n), text in results.items():
        assert text == default_responder(
            {"messages": [{"role": "user", "content": f"thread {thread} call {n}"}]}
        )
    records = logger.records
    assert len(records) == server.calls()
    assert len({r.call_id for r in records if r.status == "ok"}) == 40


def test_missing_url_is_a_permanent_error() -> None:
    with pytest.raises(PermanentLLMError, match="LLM_URL"):
        ChatClient(Settings(llm_url=None))


# --- embeddings ------------------------------------------------------------------------------


def make_embedder(
    server: FakeLLMServer, url: str, **overrides: Any
) -> tuple[EmbeddingClient, ListLogger, Sleeps]:
    settings = make_settings(server.base_url, embedding_url=url, embedding_model="emb-model", **overrides)
    logger, sleeps = ListLogger(), Sleeps()
    return EmbeddingClient(settings, logger, sleep=sleeps), logger, sleeps


@pytest.mark.parametrize("form", ["base", "full"])
def test_embeddings_are_batched_ordered_and_deterministic(server: FakeLLMServer, form: str) -> None:
    url = server.base_url if form == "base" else server.embeddings_url
    embedder, logger, _ = make_embedder(server, url, embedding_batch_size=3)
    texts = [f"memory {i}" for i in range(7)]
    vectors = embedder.embed(texts)

    assert server.calls("/v1/embeddings") == 3
    assert [len(r.json["input"]) for r in server.requests] == [3, 3, 1]
    assert all(r.json["model"] == "emb-model" for r in server.requests)
    assert len(vectors) == 7 and all(len(v) == 32 for v in vectors)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-6) for v in vectors)
    assert embedder.embed(["memory 4"]) == [vectors[4]]
    assert len({tuple(v) for v in vectors}) == 7
    assert [r.purpose for r in logger.records] == ["embedding"] * 4
    assert embedder.embed([]) == []


def test_embeddings_retry_transient_and_reject_bad_key(server: FakeLLMServer) -> None:
    embedder, logger, sleeps = make_embedder(server, server.base_url)
    server.enqueue(Reply(status=503), Reply(raw_body=b'{"object": "list", "data": []}'))
    assert len(embedder.embed(["a", "b"])) == 2
    assert server.calls("/v1/embeddings") == 3 and len(sleeps) == 2
    assert [r.status for r in logger.records] == ["error", "error", "ok"]

    server.enqueue(Reply(status=401))
    with pytest.raises(PermanentLLMError, match="EMBEDDING_API_KEY"):
        embedder.embed(["c"])
    assert server.calls("/v1/embeddings") == 4


@pytest.mark.parametrize("options", [
    {},
    {"max_tokens": 300, "temperature": 0.2},
    {"json_schema": {"name": "facts", "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}},
])
def test_a_request_is_what_the_sdks_create_sends(server: FakeLLMServer, options: dict[str, Any]) -> None:
    """The client posts its body itself, skipping the SDK's transform of typed arguments: the wire must not
    tell the difference (body, path and the headers an endpoint reads)."""
    import openai

    client, _, _ = make_client(server, llm_api_key="sk-test-key")
    client.complete(USER, purpose="t", **options)
    ours = server.requests[-1]
    schema = options.get("json_schema")
    extra = {"max_tokens": options["max_tokens"]} if "max_tokens" in options else {}
    if schema is not None:
        extra["response_format"] = {"type": "json_schema", "json_schema": {**schema, "strict": False}}
    sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test-key", max_retries=0)
    sdk.chat.completions.create(model="test-model", messages=USER, temperature=options.get("temperature", 0.0),
                                **extra)
    theirs = server.requests[-1]
    assert (ours.method, ours.path, ours.json) == (theirs.method, theirs.path, theirs.json)
    assert ours.body == theirs.body
    for header in ("authorization", "content-type", "accept"):
        assert ours.headers.get(header) == theirs.headers.get(header), header

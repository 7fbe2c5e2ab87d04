"""One OpenAI-compatible endpoint: its URL normalised to the base the `openai` client wants, its credentials
kept out of everything shown, and the one retry loop — what the chat and the embeddings clients share."""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr

from chronicle.llm.attempts import Answer, CallSpec, RetryPolicy, Service, run_with_retries
from chronicle.llm.errors import PermanentLLMError
from chronicle.llm.records import CallLogger
from chronicle.redaction.urls import mask_url_credentials, url_secrets
from chronicle.settings import Settings

if TYPE_CHECKING:
    import openai

T = TypeVar("T")

# Operation paths people paste from curl examples; the client appends these itself.
_OPERATION_SUFFIXES = ("/chat/completions", "/completions", "/embeddings", "/models")


def base_url(url: str) -> str:
    """Return the API base (`http://h:11434/v1`) for a base or full operation URL.

    `http://h:11434/v1/chat/completions`, `.../v1/embeddings`, `.../v1/` and `http://h:11434` all give
    `http://h:11434/v1`. A non-empty prefix other than `/v1` (a gateway's `/openai/v1`, `/api/v3`) is kept
    as is, because the server decides where its API lives. Query strings and fragments are dropped.
    """
    text = (url or "").strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) endpoint URL: {url!r}")
    path = parts.path.rstrip("/")
    for suffix in _OPERATION_SUFFIXES:
        if path.endswith(suffix):
            path = path[: -len(suffix)].rstrip("/")
            break
    if not path:
        # A bare host is what Ollama/vLLM users type; their OpenAI API lives under /v1.
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


@lru_cache(maxsize=8)
def openai_client(endpoint: str, api_key: str, timeout_s: float) -> openai.OpenAI:
    """The `openai` client both Chronicle clients (chat, embeddings) talk through.

    `max_retries=0`, always: `chronicle.llm.attempts.run_with_retries` is the only retry layer, so each
    attempt is exactly one HTTP request and one `llm_calls` row, and backoff/Retry-After are ours. The
    SDK's own retries would multiply attempts and hide them from the log.

    One per endpoint, key and timeout in a process, shared by its flow runs (the client is thread-safe): a new
    one builds an SSL context (loading the CA bundle, ~45 ms of CPU on a slow core) and opens new connections.
    """
    # Imported when a client is built, not with the module: offline flow runs never build one, and the SDK
    # is ~0.3 s of a fresh worker process's start-up.
    import openai

    return openai.OpenAI(base_url=endpoint, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)


class EndpointClient:
    """Thread-safe base of `ChatClient` and `EmbeddingClient`; timeouts and retry/backoff from the `llm_*`
    settings. `unset` is the refusal when the URL is empty (it names the variable to set)."""

    def __init__(self, settings: Settings, url: str | None, api_key: SecretStr | None, model: str, *, unset: str,
                 logger: CallLogger | None, sleep: Callable[[float], Any], rng: random.Random | None) -> None:
        if not url:
            raise PermanentLLMError(unset)
        base = base_url(url)
        # Shown in messages, logs and `llm_calls`: credentials in the URL masked; the connection uses `base`.
        self.endpoint = mask_url_credentials(base)
        self.model = model
        key = api_key.get_secret_value() if api_key else ""
        self._secrets = ((key,) if key else ()) + url_secrets(url)
        self._policy = RetryPolicy.from_settings(settings)
        self._logger = logger
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._client = openai_client(base, key, settings.llm.timeout_s)

    def _with_retries(self, send: Callable[[], Answer[T]], *, service: Service, purpose: str, prompt: str,
                      project_id: str | None = None, week_number: int | None = None) -> tuple[Answer[T], int]:
        spec = CallSpec(service=service, endpoint=self.endpoint, model=self.model, purpose=purpose, prompt=prompt,
                        project_id=project_id, week_number=week_number, secrets=self._secrets)
        return run_with_retries(send, spec, policy=self._policy, logger=self._logger, sleep=self._sleep,
                                rng=self._rng)

"""Exceptions of the LLM layer and the human messages for rejected requests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chronicle.redaction.redactor import Redactor
from chronicle.redaction.urls import mask_url_credentials


class LLMError(Exception):
    """Any failure talking to an LLM or embeddings endpoint."""

    def __init__(self, message: str, *, endpoint: str | None = None, http_status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.endpoint = endpoint
        self.http_status = http_status

    def __reduce__(self) -> tuple[Any, ...]:
        # Prefect pickles task exceptions; subclasses' keyword-only __init__ cannot be re-called with args.
        return (_restore, (type(self), self.args, self.__dict__))


def _restore(cls: type[LLMError], args: tuple[Any, ...], state: dict[str, Any]) -> LLMError:
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class TransientLLMError(LLMError):
    """Worth retrying: 429, 5xx, timeouts, connection resets, malformed or empty response bodies."""


class MalformedResponseError(TransientLLMError):
    """HTTP 200 but no usable answer: non-JSON body, missing choices, empty content, wrong vector count."""

    def __init__(self, detail: str, *, endpoint: str | None = None) -> None:
        super().__init__(f"malformed response: {detail}", endpoint=endpoint, http_status=200)


class PermanentLLMError(LLMError):
    """Retrying cannot help: bad key, unknown model or URL, rejected request (400/401/403/404/422 ...)."""


class LLMUnavailableError(TransientLLMError):
    """Every attempt failed transiently; the endpoint is down or overloaded."""

    def __init__(
        self,
        *,
        attempts: int,
        last_error: str,
        endpoint: str,
        http_status: int | None = None,
        label: str = "LLM",
    ) -> None:
        super().__init__(
            f"{label} endpoint {endpoint} unavailable after {attempts} attempt{'' if attempts == 1 else 's'}"
            f"; last error: {last_error}",
            endpoint=endpoint,
            http_status=http_status,
        )
        self.attempts = attempts
        self.last_error = last_error


@dataclass(frozen=True)
class Service:
    """Names used in messages so users know which setting to fix."""

    label: str
    url_var: str
    key_var: str
    model_var: str


LLM_SERVICE = Service("LLM", "LLM_URL", "LLM_API_KEY", "LLM_MODEL")
EMBEDDING_SERVICE = Service("Embedding", "EMBEDDING_URL", "EMBEDDING_API_KEY", "EMBEDDING_MODEL")


def rejection_message(
    status: int | None, *, service: Service, endpoint: str, model: str, detail: str = ""
) -> str:
    """A one-line explanation of a permanent failure, naming the setting most likely wrong."""
    who = f"{service.label} endpoint"
    tail = f": {detail.strip()[:300]}" if detail and detail.strip() else ""
    if status == 401:
        return f"{who} rejected the API key (401) at {endpoint} — check {service.key_var}{tail}"
    if status == 403:
        return (
            f"{who} refused access (403) at {endpoint} — the key in {service.key_var} "
            f"may lack permission for model '{model}'{tail}"
        )
    if status == 404:
        return (
            f"{who} answered 404 at {endpoint} — check {service.url_var} (base should end in /v1) "
            f"and that model '{model}' ({service.model_var}) exists{tail}"
        )
    if status in (400, 413, 422):
        return f"{who} rejected the request ({status}) at {endpoint} for model '{model}'{tail}"
    if status is None:
        return f"{who} call to {endpoint} failed and cannot be retried{tail}"
    return f"{who} answered HTTP {status} at {endpoint}{tail}"


def sanitise(text: str | None, secrets: tuple[str, ...] = ()) -> str | None:
    """An error text fit to print, log or store: the client's own key (and URL password) replaced by `****`
    wherever a server echoed it, then every credential shape the redactor knows (a body echoing some other
    key, `Authorization: Bearer …`, a URL with a password). Every message this layer raises passes here."""
    if text is None:
        return None
    for secret in secrets:
        if secret:
            text = text.replace(secret, "****")
    return Redactor.build().redact(mask_url_credentials(text))

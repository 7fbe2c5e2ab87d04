"""Normalise OpenAI-compatible endpoint URLs to the base the `openai` client wants."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import openai

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


def openai_client(endpoint: str, api_key: str, timeout_s: float) -> openai.OpenAI:
    """The `openai` client both Chronicle clients (chat, embeddings) talk through.

    `max_retries=0`, always: `chronicle.llm.attempts.run_with_retries` is the only retry layer, so each
    attempt is exactly one HTTP request and one `llm_calls` row, and backoff/Retry-After are ours. The
    SDK's own retries would multiply attempts and hide them from the log.
    """
    return openai.OpenAI(base_url=endpoint, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)

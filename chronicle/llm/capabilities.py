"""What an endpoint accepts, detected once per (endpoint, model) and remembered for the process.

Structured output (`response_format` with a JSON schema) is asked for where the endpoint supports it —
OpenAI, vLLM and Ollama accept it; DeepSeek and many gateways answer 400. The first refusal is
remembered, so later calls go straight to plain text (with the parser's recovery), never one failed
request per call.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_structured: dict[tuple[str, str], bool] = {}
_probes: dict[tuple[str, str], threading.Lock] = {}


def structured_output(endpoint: str, model: str) -> bool | None:
    """True / False once known; None before the first structured request to this endpoint and model."""
    with _lock:
        return _structured.get((endpoint, model))


def remember_structured_output(endpoint: str, model: str, supported: bool) -> None:
    with _lock:
        _structured[(endpoint, model)] = supported


@contextmanager
def probing(endpoint: str, model: str) -> Iterator[None]:
    """Held while the first structured request to an endpoint runs: concurrent callers (a distillation fans
    chunks out) wait for its verdict instead of each sending a request the endpoint may refuse."""
    with _lock:
        probe = _probes.setdefault((endpoint, model), threading.Lock())
    with probe:
        yield


def forget_capabilities() -> None:
    """Detect again (tests; an endpoint upgraded while a long-lived worker runs)."""
    with _lock:
        _structured.clear()
        _probes.clear()

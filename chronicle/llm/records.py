"""One record per LLM attempt, and the logger protocol that receives them."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class LLMCallRecord:
    """What happened on one attempt of one call; never holds the API key."""

    call_id: str
    started_at: datetime
    model: str
    endpoint: str
    purpose: str
    project_id: str | None
    week_number: int | None
    prompt_hash: str
    prompt: str
    response: str | None
    tokens_in: int | None
    tokens_out: int | None
    latency_ms: int
    status: Literal["ok", "error"]
    error: str | None
    http_status: int | None
    attempt: int


class CallLogger(Protocol):
    """Receives every attempt; called from several threads at once."""

    def log(self, record: LLMCallRecord) -> None: ...


class ListLogger:
    """Keeps records in memory (tests, dry runs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[LLMCallRecord] = []

    def log(self, record: LLMCallRecord) -> None:
        with self._lock:
            self._records.append(record)

    @property
    def records(self) -> list[LLMCallRecord]:
        with self._lock:
            return list(self._records)

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)


def serialise_prompt(payload: Any) -> str:
    """Stable JSON text of a prompt; sorted keys so equal prompts hash equal across dict orderings."""
    return json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def scrub(text: str | None, secrets: tuple[str, ...]) -> str | None:
    """Mask secrets some servers echo back in error bodies."""
    if text is None:
        return None
    for secret in secrets:
        if secret:
            text = text.replace(secret, "****")
    return text

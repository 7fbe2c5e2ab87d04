"""Distillation's LLM calls go through the one gate: each holds a slot of the shared `llm` limit."""

from __future__ import annotations

import json
import threading
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from tests.distill.conftest import ingest, use_fake_endpoints
from tests.fakellm import FakeLLMServer


class SlotProbe:
    """A model that, while answering, asks the Prefect API how many `llm` slots are held right now."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active: list[int] = []

    def __call__(self, request: dict[str, Any]) -> str:
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            held = client.read_global_concurrency_limit_by_name("llm").active_slots
        with self.lock:
            self.active.append(held)
        return json.dumps([{"content": f"Memory number {len(self.active)} about the release plan.",
                            "summary": "release plan", "keyInfo": [], "tags": ["plan"], "importance": 0.6,
                            "targetFile": "MEMORY.md", "action": "append"}])


def test_every_distill_call_holds_a_slot_of_the_shared_llm_limit(
        distill_env: Path, notes_dir: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.client.orchestration import get_client

    from chronicle.flows.distill_memory import distill_memory

    use_fake_endpoints(monkeypatch, fake_llm.base_url)
    monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "2")
    fake_llm.responder = probe = SlotProbe()
    ingest(notes_dir)
    summary = distill_memory(days=11, until=date(2026, 2, 24))
    assert summary.tally.llm_calls >= 3 and len(probe.active) == summary.tally.llm_calls
    # Every call was made while this run held slots of `llm` (a distill outside the gate would see 0).
    assert min(probe.active) >= 1 and max(probe.active) <= 2, probe.active
    with get_client(sync_client=True) as client:
        limit = client.read_global_concurrency_limit_by_name("llm")
    assert limit.limit == 2 and limit.active_slots == 0  # released when the fan-out ended

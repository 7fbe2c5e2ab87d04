"""Pytest fixtures for the fake LLM server (registered by the root conftest via `pytest_plugins`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakellm.server import FakeLLMServer


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A fresh running server per test, stopped afterwards."""
    with FakeLLMServer() as server:
        yield server

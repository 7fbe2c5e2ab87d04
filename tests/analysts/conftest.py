"""These tests run real flows: they ask for the session's Prefect API (tests/conftest.py `prefect_api`)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _prefect(prefect_api: None) -> None:
    """Every test here runs a flow or reads the API (opt-in: tests/unit never starts a Prefect server)."""

"""The deployments suite's fixtures (session API URL, child-process environment) for the operator tests."""

import pytest

from tests.deployments.conftest import api_url, proc_env  # noqa: F401 - pytest finds fixtures by name


@pytest.fixture(autouse=True)
def _prefect(prefect_api: None) -> None:
    """Every test here runs a flow or reads the API (opt-in: tests/unit never starts a Prefect server)."""

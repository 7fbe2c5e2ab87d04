"""A real PostgreSQL 15 and a real S3-compatible server (moto) on 127.0.0.1, started once per session, and
(for the multi-worker test) a Prefect server on that PostgreSQL.

They FAIL the tests (never skip them) when they cannot start: the lake topology is only shown to work
against the real parts. How they start is `tests/lake/servers.py` (shared with `bench/scale.py`). Each test
gets its own database and bucket prefix: `lake_env` (variables for child processes) and `lake_settings`
(this process).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

import pytest

from tests.lake import servers
from tests.lake.servers import BUCKET, S3, Postgres, PrefectServer, ServerError

T = TypeVar("T")


def _started(manager: AbstractContextManager[T]) -> Iterator[T]:
    """Enter a server's context; a server that cannot start fails the test (never a skip)."""
    try:
        value = manager.__enter__()
    except ServerError as exc:
        pytest.fail(str(exc))
    try:
        yield value
    finally:
        manager.__exit__(None, None, None)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    yield from _started(servers.postgres_server())


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    """moto in server mode in its own process (no GIL shared with the tests), one bucket for everyone."""
    yield from _started(servers.moto_server(BUCKET))


@pytest.fixture(scope="session")
def prefect_on_postgres(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectServer]:
    """`prefect server start` with its database in the session's PostgreSQL (asyncpg), as deployed; proactive
    automations evaluated every second as on the session's server (tests/conftest.py)."""
    granularity = os.environ["PREFECT_SERVER_EVENTS_PROACTIVE_GRANULARITY"]
    yield from _started(servers.prefect_server(postgres, "prefect", tmp_path_factory.mktemp("prefect-server"),
                                               PREFECT_SERVER_EVENTS_PROACTIVE_GRANULARITY=granularity))


@pytest.fixture()
def lake_env(postgres: Postgres, s3: S3) -> dict[str, str]:
    """Environment of one lake: its own catalog database and its own prefix in the shared bucket."""
    try:
        return servers.lake_env(postgres, s3, f"lake_{uuid.uuid4().hex[:10]}")
    except ServerError as exc:
        pytest.fail(str(exc))


@pytest.fixture()
def lake_settings(home: Path, lake_env: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    """Settings of this process pointed at a fresh lake (the flows' `load_settings()` sees it too)."""
    from chronicle.settings import load_settings
    from chronicle.storage import lake

    for key, value in lake_env.items():
        monkeypatch.setenv(key, value)
    yield load_settings()
    lake.close_sessions()


"""The use cases' Prefect client works against the real API and parses the CA bundle once per process, not once
per client (each parse is ~50 ms of CPU, and a run makes several clients)."""

from __future__ import annotations

import ssl

import pytest


def test_clients_share_one_tls_context_and_reach_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.settings import PREFECT_API_TLS_INSECURE_SKIP_VERIFY, temporary_settings

    from chronicle.services import prefect_client as module

    made: list[ssl.SSLContext] = []
    real = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        made.append(real(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(module.ssl, "create_default_context", counted)
    module.verified_context.cache_clear()
    for _ in range(3):
        with module.prefect_client() as client:
            assert client.api_healthcheck() is None  # None: healthy
    assert len(made) == 1

    # Prefect's own path, untouched:
    with temporary_settings({PREFECT_API_TLS_INSECURE_SKIP_VERIFY: True}), module.prefect_client() as client:
        assert client.api_healthcheck() is None
    assert len(made) == 2 and made[1].verify_mode == ssl.CERT_NONE

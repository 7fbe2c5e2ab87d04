"""The use cases' Prefect client: `get_client(sync_client=True)` handed this process's one TLS context.

Prefect builds a new verified SSL context for every client it makes — the CA bundle parsed again, ~50 ms of CPU —
and one run makes several (its record, its artifacts, the `llm` limit). The context is built once per CA file
here, as Prefect builds it (`PREFECT_API_SSL_CERT_FILE`, else certifi's bundle), and shared the way one httpx
client shares it between its connections. With `PREFECT_API_TLS_INSECURE_SKIP_VERIFY` Prefect's own path runs.
"""

from __future__ import annotations

import ssl
from functools import cache
from typing import Any


@cache
def verified_context(cafile: str) -> ssl.SSLContext:
    """The process's one verified context for `cafile`."""
    return ssl.create_default_context(cafile=cafile)


def prefect_client() -> Any:
    """A SyncPrefectClient for the current PREFECT_API_URL (use it as a context manager, as get_client's)."""
    import certifi
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_SSL_CERT_FILE, PREFECT_API_TLS_INSECURE_SKIP_VERIFY

    if PREFECT_API_TLS_INSECURE_SKIP_VERIFY.value():
        return get_client(sync_client=True)
    context = verified_context(PREFECT_API_SSL_CERT_FILE.value() or certifi.where())
    return get_client(sync_client=True, httpx_settings={"verify": context})

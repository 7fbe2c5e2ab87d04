"""The one shared LLM concurrency limit: Prefect global concurrency limit `llm`.

Every flow that calls the LLM reserves slots of `llm` (`settings.llm_concurrency` in all, across
all flow runs and processes) and then spreads its calls over the slots it holds with an in-process
semaphore. Reserving once per fan-out instead of once per call is deliberate: with Prefect 3.9 one
lease-based acquire/release costs ~100 ms sequentially and ~300 ms under 8-way contention (measured
with the SQLite-backed API), which would dominate sub-second LLM calls. A run asks for as many
slots as it can use, takes fewer when others hold some (halving, down to one, which it waits for),
and releases them when its fan-out ends.

If the Prefect API refuses (no server, old server, no permission), a process-local semaphore of
`llm_concurrency` slots is used instead and a warning says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from contextvars import ContextVar

from chronicle.settings import Settings

LIMIT_NAME = "llm"
log = logging.getLogger("chronicle.weekly")

_local_lock = threading.Lock()
_local_semaphores: dict[int, threading.BoundedSemaphore] = {}
_current: ContextVar[LLMGate | None] = ContextVar("chronicle_llm_gate", default=None)


class LLMGate:
    """The slots one fan-out holds; `slot()` bounds its in-flight calls to them."""

    def __init__(self, slots: int, source: str, semaphore: threading.BoundedSemaphore | None = None) -> None:
        self.slots = slots
        self.source = source  # "prefect" | "local"
        self._semaphore = semaphore or threading.BoundedSemaphore(slots)

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._semaphore:
            yield


def ensure_llm_limit(slots: int) -> bool:
    """Create the `llm` limit, or resize it to `slots`; idempotent. False when the API refuses."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectAlreadyExists

    try:
        # ObjectAlreadyExists: another run created it between our read and our create — same outcome.
        with get_client(sync_client=True) as client, suppress(ObjectAlreadyExists):
            client.upsert_global_concurrency_limit_by_name(LIMIT_NAME, slots)
        return True
    except Exception as exc:
        log.warning("Prefect API refused the '%s' concurrency limit (%s: %s); using a process-local limit of %d",
                    LIMIT_NAME, type(exc).__name__, exc, slots)
        return False


def _local_gate(settings: Settings) -> LLMGate:
    with _local_lock:
        semaphore = _local_semaphores.setdefault(
            settings.llm_concurrency, threading.BoundedSemaphore(settings.llm_concurrency))
    return LLMGate(settings.llm_concurrency, "local", semaphore)


@contextmanager
def reserve_llm(settings: Settings, wanted: int) -> Iterator[LLMGate]:
    """Hold up to `wanted` slots of `llm` for the block; tasks started inside see the gate."""
    n = max(1, min(settings.llm_concurrency, wanted))
    with ExitStack() as stack:
        gate = _acquire(settings, n, stack)
        token = _current.set(gate)
        try:
            yield gate
        finally:
            _current.reset(token)


def _acquire(settings: Settings, n: int, stack: ExitStack) -> LLMGate:
    from prefect.concurrency.sync import concurrency

    if not ensure_llm_limit(settings.llm_concurrency):
        return _local_gate(settings)
    while True:
        try:
            # Short waits for a big share, an unbounded one for a single slot: never starve, never hog.
            stack.enter_context(concurrency(LIMIT_NAME, occupy=n, strict=True,
                                            timeout_seconds=None if n == 1 else 5.0))
            return LLMGate(n, "prefect")
        except TimeoutError:
            n = max(1, n // 2)
        except Exception as exc:
            log.warning("could not take '%s' slots from the Prefect API (%s: %s); using a process-local limit",
                        LIMIT_NAME, type(exc).__name__, exc)
            return _local_gate(settings)


@contextmanager
def llm_slot(settings: Settings) -> Iterator[None]:
    """One LLM call's slot: from the enclosing reservation, or a one-slot reservation of its own."""
    gate = _current.get()
    if gate is not None:
        with gate.slot():
            yield
        return
    with reserve_llm(settings, 1) as own, own.slot():
        yield


def current_gate() -> LLMGate | None:
    return _current.get()

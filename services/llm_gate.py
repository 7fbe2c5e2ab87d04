"""The LLM gate: every LLM call of every flow goes through here, once.

Three things every call needs, wired in one place: a slot of the shared Prefect global concurrency
limit `llm` (`settings.llm.concurrency` in all, across all flow runs and processes), the one
`ChatClient` per flow run and endpoint (the only retry layer), and the call logger that writes one
redacted `llm_calls` row per attempt.

Inside `held_calls()` (a week being written) the successful attempts are held and handed to the caller,
which stores them in the same commit as their result: one write window per week, not one per attempt.
Failed attempts are written at once as before (retries wait anyway), and held rows the unit did not
store — it raised, or its write failed — are written when it ends, so no attempt's row is lost.

Slots: a fan-out reserves several at once and spreads its calls over them with an in-process semaphore.
That is a second mechanism beside Prefect's limit, and it stays because the limit alone, taken around each
call, is slow where it matters: `bench/llm_slots.py` (64 calls, 8 slots, 32 threads, one real API) measures
4.0 s with the reservation against 17-21 s with the per-call limit at 0.5 s a call (ideal 4.0 s; three runs),
and 16.0 s against 22.8 s at 2 s: a waiter for a busy limit is told to retry later and polls, so freed slots
sit idle.
A run asks for as many slots as it can use, takes fewer when others hold some (halving, down to one, which
it waits for), and releases them when its fan-out ends. A call outside any reservation takes a one-slot
reservation of its own.

If the Prefect API refuses (no server, old server, no permission), a process-local semaphore of
`llm_concurrency` slots is used instead and a warning says so.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from chronicle.llm import ChatClient, LLMCallRecord
from chronicle.llm.call import LLMCall
from chronicle.llm.records import CallLogger, serialise_prompt
from chronicle.redaction.configured import redactor_for
from chronicle.redaction.redactor import Redactor
from chronicle.redaction.text import Redacted, gate
from chronicle.settings import Settings
from chronicle.storage.llm_log import CallRow, DuckDBCallLogger, write_calls

LIMIT_NAME = "llm"
log = logging.getLogger("chronicle.llm")

_local_lock = threading.Lock()
_current: ContextVar[LLMGate | None] = ContextVar("chronicle_llm_gate", default=None)
_turn: ContextVar[tuple[float, int] | None] = ContextVar("chronicle_llm_turn", default=None)


@contextmanager
def llm_turn(turn: tuple[float, int]) -> Iterator[None]:
    """Calls made inside the block wait for a slot in `turn` order (lowest first), not in arrival order.

    A backfill's group task passes (when the group started, the week's place in it): the weeks of the
    older group get the slots first, so it ends while the next group still has weeks waiting and the slots
    never drain at a hand-over. In arrival order the two groups in flight finished together (their weeks
    all queued at once) and every slot went idle while the next task run started.
    """
    token = _turn.set(turn)
    try:
        yield
    finally:
        _turn.reset(token)


class _Slots:
    """A counting semaphore whose waiters get a freed slot lowest turn first (FIFO among calls without one:
    their turn is when they arrived). A release hands the slot straight to the next waiter."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._free = slots
        self._lock = threading.Lock()
        self._queued = threading.Condition(self._lock)  # for `wait_for_waiters`
        self._waiting: list[tuple[tuple[float, int], int, threading.Event]] = []
        self._order = itertools.count()

    def acquire(self, turn: tuple[float, int] | None) -> None:
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return
            handed = threading.Event()
            heapq.heappush(self._waiting, (turn or (time.monotonic(), 0), next(self._order), handed))
            self._queued.notify_all()
        try:
            handed.wait()
        except BaseException:
            with self._lock:  # interrupted: give back a slot handed meanwhile, or leave the queue
                if not handed.is_set():
                    self._waiting = [w for w in self._waiting if w[2] is not handed]
                    heapq.heapify(self._waiting)
            if handed.is_set():
                self.release()
            raise

    def wait_for_waiters(self, n: int, timeout_s: float) -> bool:
        """Wait until `n` callers are queued for a slot (a test's synchronisation point)."""
        with self._queued:
            return self._queued.wait_for(lambda: len(self._waiting) >= n, timeout_s)

    def release(self) -> None:
        with self._lock:
            if self._waiting:
                heapq.heappop(self._waiting)[2].set()
                return
            if self._free >= self.slots:
                raise ValueError("LLM slot released more times than acquired")
            self._free += 1


_local_slots: dict[int, _Slots] = {}


class ReservationEnded(RuntimeError):
    """An LLM call through a reservation that has ended: its run is stopping (cancelled) and gave its slots back."""


class LLMGate:
    """The slots one fan-out holds; `slot()` bounds its in-flight calls to them, until the reservation ends."""

    def __init__(self, slots: int, source: str, semaphore: _Slots | None = None) -> None:
        self.slots = slots
        self.source = source  # "prefect" | "local"
        self._semaphore = semaphore or _Slots(slots)
        self.ended = False

    @contextmanager
    def slot(self) -> Iterator[None]:
        self._semaphore.acquire(_turn.get())
        try:
            # A fan-out's threads outlive its reservation when the run is cancelled: the SIGTERM stops only the
            # main thread, which gives the slots back on its way out, while the week threads went on calling the
            # LLM under slots nobody held, week after week, and held the process up until Prefect killed it 30 s
            # later. A call already in flight finishes; no new one starts.
            if self.ended:
                raise ReservationEnded(f"the run's '{LIMIT_NAME}' slots were given back (the run is stopping): "
                                       "no further LLM call")
            yield
        finally:
            self._semaphore.release()


def ensure_llm_limit(slots: int) -> bool:
    """Create the `llm` limit, or resize it to `slots`; idempotent. False when the API refuses."""
    from prefect.exceptions import ObjectAlreadyExists

    from chronicle.services.prefect_client import prefect_client

    try:
        # ObjectAlreadyExists: another run created it between our read and our create — same outcome.
        with prefect_client() as client, suppress(ObjectAlreadyExists):
            client.upsert_global_concurrency_limit_by_name(LIMIT_NAME, slots)
        return True
    except Exception as exc:
        log.warning("Prefect API refused the '%s' concurrency limit (%s: %s); using a process-local limit of %d",
                    LIMIT_NAME, type(exc).__name__, exc, slots)
        return False


def _local_gate(settings: Settings) -> LLMGate:
    with _local_lock:
        semaphore = _local_slots.setdefault(settings.llm.concurrency, _Slots(settings.llm.concurrency))
    return LLMGate(settings.llm.concurrency, "local", semaphore)


QUICK_TRY_S = 0.75
"""The first request for a share is given this long (it takes 20-300 ms), then asked again at once. The API
answers 503 when its SQLite file is busy (seen in ~half of the back-to-back backfills of bench/backfill), and
Prefect's client retries a 503 only 2 s (2 ** attempt, jittered) later: that wait was a fifth of a 10 s
backfill's overhead. A share granted after the timeout is released by Prefect's own service."""


WAIT_S = 5.0
"""How long each later request for a share waits: also how long a run cancelled while it waits for slots takes to
end after its body has stopped."""


LEASE_S = 60.0
"""How long a reservation's lease lasts unrenewed (Prefect's shortest; its holder renews it while it runs): the
slots of a run killed with -9 come back this long after its death (plus the repossessor's 15 s loop), not after
Prefect's default five minutes."""


@contextmanager
def reserve_llm(settings: Settings, wanted: int) -> Iterator[LLMGate]:
    """Hold up to `wanted` slots of `llm` for the block; tasks started inside see the gate."""
    n = max(1, min(settings.llm.concurrency, wanted))
    with ExitStack() as stack:
        gate = _acquire(settings, n, stack)
        token = _current.set(gate)
        try:
            yield gate
        finally:
            gate.ended = True
            _current.reset(token)


def _acquire(settings: Settings, n: int, stack: ExitStack) -> LLMGate:
    from prefect.concurrency.sync import concurrency

    if not ensure_llm_limit(settings.llm.concurrency):
        return _local_gate(settings)
    quick, said = True, False
    while True:
        try:
            # Short waits, halving the share down to one slot, asked again for ever: never starve, never hog, never
            # wait in silence. A wait is never unbounded, even for the last slot: Prefect's slot service finishes
            # every request in flight before its process may exit, so a cancelled run would wait for slots it no
            # longer wants until its runner killed it. (A request timed out as the server grants it holds its
            # slot until its lease ends.)
            wait = QUICK_TRY_S if quick else WAIT_S
            if not quick and n == 1 and not said:  # the last share: this wait can be long
                _say(_waiting(n))
                said = True
            stack.enter_context(concurrency(LIMIT_NAME, occupy=n, strict=True, timeout_seconds=wait,
                                            lease_duration=LEASE_S))
            if said:
                _say(f"got {n} '{LIMIT_NAME}' slot(s); going on")
            return LLMGate(n, "prefect")
        except TimeoutError:
            if quick:  # the same share again at once (a 503 is retried by the client only 2 s later)
                quick = False
                continue
            if not said:
                _say(_waiting(n))
                said = True
            n = max(1, n // 2)
        except Exception as exc:
            log.warning("could not take '%s' slots from the Prefect API (%s: %s); using a process-local limit",
                        LIMIT_NAME, type(exc).__name__, exc)
            return _local_gate(settings)


class _QuietTimeouts(logging.Filter):
    """Drop Prefect's ERROR for a slot request that timed out: `_acquire` times its requests out on purpose (a quick
    try, then 5 s waits while it halves its share) and says itself what it waits for. Without this, every wait for
    slots held by another run, or by a run killed a moment ago, printed ERROR lines on the console and the Logs tab
    that read as a failure. Any other failure of Prefect's services is still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (len(args) == 2 and str(args[0]).startswith("ConcurrencySlotAcquisition")
                    and "TimeoutError" in repr(args[1]))


logging.getLogger("prefect._internal.concurrency").addFilter(_QuietTimeouts())


def _waiting(n: int) -> str:
    """What a waiting reservation waits for: the limit, who holds it, and when a dead holder's slots return."""
    from chronicle.services.prefect_client import prefect_client

    held = ""
    with suppress(Exception), prefect_client() as client:
        limit = client.read_global_concurrency_limit_by_name(LIMIT_NAME)
        held = f" ({limit.active_slots} of {limit.limit} held by other runs)"
    return (f"waiting for {n} slot(s) of the Prefect concurrency limit '{LIMIT_NAME}'{held}: LLM calls of other "
            f"backfills or distills run now; slots of a run that was killed come back within {LEASE_S + 15:.0f} s "
            "of its death (`prefect gcl inspect llm` shows the limit)")


def _say(message: str) -> None:
    """On the run's Logs tab and the console when inside a run, else in the log."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        get_run_logger().warning("%s", message)
    except MissingContextError:
        log.warning("%s", message)


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


# --- the call --------------------------------------------------------------------------------
class HeldCalls:
    """The `llm_calls` rows of one unit of work (a week) waiting to be written with its result."""

    def __init__(self) -> None:
        self.rows: list[CallRow] = []
        self.stored = False

    def take(self) -> list[CallRow]:
        """The rows, for the caller's commit; call `done()` once it committed them."""
        return list(self.rows)

    def done(self) -> None:
        self.stored = True


_held = threading.local()


@contextmanager
def held_calls(settings: Settings) -> Iterator[HeldCalls]:
    """Hold this thread's successful LLM attempts (their `llm_calls` rows) for the caller to store with
    its result; whatever it did not store (it raised, or its write failed) is written on the way out."""
    held, outer = HeldCalls(), getattr(_held, "calls", None)
    _held.calls = held
    try:
        yield held
    finally:
        _held.calls = outer
        if held.rows and not held.stored:
            write_calls(settings, held.rows)


_ROLES = frozenset({"system", "user", "assistant"})
_gated = threading.local()


def _gated_prompt(sent: list[dict[str, Any]], shown: list[dict[str, Any]]) -> str | None:
    """The `llm_calls` prompt text of `shown` (the messages `sent` as the gate let them through) when that text is
    nothing but this gate's output: every message exactly a role name and content the gate redacted itself (plain
    text in `sent`, so `redactor_for(settings)` made it; text already `Redacted` may come from another redactor).
    None for any other shape (another field, content parts): the row's prompt is then redacted as a whole."""
    for before, after in zip(sent, shown, strict=True):
        if after.keys() != {"role", "content"} or after["role"] not in _ROLES \
                or isinstance(before["content"], Redacted) or not isinstance(after["content"], Redacted):
            return None
    return serialise_prompt(shown)


class _RedactingBufferedLogger:
    """Redacts every record (prompt, response, error) and holds a thread's records until its slot is free.

    Redacting here, not in the callers, means no purpose (weekly, rollup, ask, distill, repair) can store
    a secret in `llm_calls` by forgetting to. The records are still written per attempt, just a few
    milliseconds later: the slot is not held while DuckDB is opened for the audit row.

    A prompt equal to the text `llm_call` recorded for this thread, with this logger's redactor, as it passed its
    messages through the gate (`_gated_prompt`: role names, and contents that redactor redacted there) is stored as
    it is: every string in it is that redactor's output already, and redacting the serialised prompt again cost a
    generated week more than any other redaction on its path. Any other prompt is redacted here.
    """

    def __init__(self, inner: CallLogger, redactor: Redactor) -> None:
        self.inner = inner
        self.redactor = redactor
        self._local = threading.local()

    def log(self, record: LLMCallRecord) -> None:
        r = self.redactor.redact
        by, gated = getattr(_gated, "prompt", None) or (None, None)
        record = replace(record, prompt=record.prompt if by is self.redactor and gated == record.prompt else
                         r(record.prompt),
                         response=r(record.response) if record.response is not None else None,
                         error=r(record.error) if record.error is not None else None)
        held = getattr(_held, "calls", None)
        if held is not None and record.status == "ok" and isinstance(self.inner, DuckDBCallLogger):
            held.rows.append(self.inner.row(record))  # written with the week's report (held_calls)
            return
        buffer = getattr(self._local, "buffer", None)
        if buffer is None:
            self.inner.log(record)
        else:
            buffer.append(record)

    @contextmanager
    def buffering(self) -> Iterator[None]:
        self._local.buffer = []
        try:
            yield
        finally:
            pending, self._local.buffer = self._local.buffer, None
            for record in pending:
                self.inner.log(record)


_clients: OrderedDict[tuple[Any, ...], tuple[ChatClient, _RedactingBufferedLogger]] = OrderedDict()
_clients_lock = threading.Lock()
_MAX_CLIENTS = 8  # a long-lived worker serves many flow runs; keep only the recent ones


def _client(settings: Settings, run_id: str) -> tuple[ChatClient, _RedactingBufferedLogger]:
    # One thread-safe client (and HTTP connection pool) per flow run and endpoint.
    key = (settings.llm.url, settings.llm.model, str(settings.db_path), run_id, id(settings))
    with _clients_lock:
        if key not in _clients:
            logger = _RedactingBufferedLogger(DuckDBCallLogger(settings, run_id), redactor_for(settings))
            _clients[key] = (ChatClient(settings, logger=logger), logger)
            while len(_clients) > _MAX_CLIENTS:
                _clients.popitem(last=False)
        _clients.move_to_end(key)
        return _clients[key]


def llm_call(settings: Settings, run_id: str, *, project_id: str | None = None,
             week_number: int | None = None, redact_answer: bool = True) -> LLMCall:
    """The one way to call the LLM: each call takes a slot of `llm` (from the enclosing reservation, or
    its own), goes through the run's `ChatClient` and is logged, redacted, to `llm_calls`.

    The answer comes back redacted too: it becomes a report, a rollup, a map note fed into the next prompt
    or `chronicle ask`'s printed answer, and a credential the model makes up must reach none of them.
    Distillation passes `redact_answer=False`: its JSON is parsed first and every field of every memory is
    redacted after (`redact_memory`, the memory gate), which a text-level pass could not do without touching the JSON.
    """
    client, logger = _client(settings, run_id)
    redactor = redactor_for(settings)

    def call(messages: list[dict[str, str]], purpose: str, **options: Any) -> str:
        # The one gate of the LLM sink: every message is redacted as the model will read it — the assembled
        # prompt, lines joined and entries side by side — whatever its builder redacted piece by piece before.
        shown = [{**m, "content": gate(m["content"], redactor)} if isinstance(m.get("content"), str) else m
                 for m in messages]
        _gated.prompt = (redactor, _gated_prompt(messages, shown))  # its log rows need not redact it again
        try:
            with logger.buffering(), llm_slot(settings):
                text = client.complete(shown, purpose=purpose, project_id=project_id, week_number=week_number,
                                       **options).text
        finally:
            _gated.prompt = None
        return redactor.redact(text) if redact_answer else text

    return call

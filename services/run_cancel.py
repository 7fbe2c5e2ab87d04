"""A run no runner watches (started from a terminal: `chronicle backfill`, `ingest`, `distill`) stops at the Prefect
UI's Cancel as a served run does, instead of going on to its end; the command that called it ends with one line.

A served or worker run is left to its runner, which stops it itself.
"""

from __future__ import annotations

import contextvars
import logging
import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prefect.runtime import flow_run

from chronicle.run_rows import CANCELLED_MESSAGE

CANCEL_READ_EVERY_S = 2.0
"""How often a run no runner watches reads its own state, for the UI's Cancel: one small API read, against a week's
LLM call of seconds to minutes."""

_stopped_here = threading.Event()  # this process stopped its own run at a Cancel; `cancel_ends_here` consumes it


@contextmanager
def stopped_at_cancel(run_id: str) -> Iterator[None]:
    """Stop the body at the UI's Cancel when no runner would: a run started from a terminal went on to its end (hours
    of LLM calls), only its last state request answered Cancelling. A thread reads the run's state every
    `CANCEL_READ_EVERY_S`; at Cancelling it stops the body as a runner stops a served run (a cancel intent, then
    SIGTERM to the main thread). `tracked_run`, whose body this wraps, records CANCELLED, the `llm` slots and week
    leases are given back as the body unwinds, and Prefect's engine, which owns a runner-less run's cancellation,
    sets Cancelling (its `on_cancellation` hooks) and then Cancelled. Nothing is sent once the body has ended; a
    cancel after that is the hook's (`run_tracking.record_unfinished`)."""
    fire = _cancel_trigger()
    if fire is None:
        yield
        return
    done, lock = threading.Event(), threading.Lock()
    # The thread reads through the command's Prefect API, which `run_flow` sets for this context only.
    watch = contextvars.copy_context().run
    threading.Thread(target=watch, args=(_watch_cancel, run_id, done, lock, fire), name="chronicle-cancel-watch",
                     daemon=True).start()
    try:
        yield
    finally:
        with lock:
            done.set()


def _watch_cancel(run_id: str, done: threading.Event, lock: threading.Lock, fire: Callable[[], bool]) -> None:
    from chronicle.services.prefect_client import prefect_client

    try:
        with prefect_client() as client:
            while not done.wait(CANCEL_READ_EVERY_S):
                try:
                    state = client.read_flow_run(uuid.UUID(run_id)).state
                except Exception:  # the API did not answer this time: the next read asks again
                    continue
                if state is not None and state.is_cancelling():
                    with lock:
                        if not done.is_set() and fire():
                            _stopped_here.set()
                    return
    except Exception as exc:  # no client at all: the run goes on as before, cancelled at its last state request
        logging.getLogger("chronicle.runs").warning("this run will not stop at a Cancel before its end: %s: %s",
                                                    type(exc).__name__, exc)


def _cancel_trigger() -> Callable[[], bool] | None:
    """How this process stops its own run's body, or None when it must not or cannot. A run a runner or a worker
    started (they set these variables) is stopped by them: stopping it here too would cancel it twice. Only the main
    thread gets Prefect's SIGTERM handler, which turns the signal into the engine's cancellation once the intent is
    set; a body in another thread, or a Prefect without that intent, is not stopped early."""
    if os.environ.get("PREFECT__FLOW_RUN_ID") or flow_run.get_id() is None:
        return None
    if os.environ.get("PREFECT__ENABLE_CANCELLATION_AND_CRASHED_HOOKS", "true").lower() != "true":
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        from prefect._internal import control_listener
        from prefect.utilities.engine import commit_control_intent_and_ack, is_prefect_sigterm_handler_installed

        set_intent = control_listener._set_intent
    except (ImportError, AttributeError):
        return None
    if not is_prefect_sigterm_handler_installed():
        return None
    main = threading.get_ident()

    def fire() -> bool:
        # What a runner's cancel does, with the signal sent to the main thread so it interrupts a blocking wait
        # (the fan-out waiting for its next group), under Prefect's lock: never once its handler is gone.
        return commit_control_intent_and_ack(commit_intent=lambda: set_intent("cancel"),
                                             clear_intent=control_listener.clear_intent, send_ack=lambda: None,
                                             trigger_cancel=lambda: signal.pthread_kill(main, signal.SIGTERM))

    return fire


@contextmanager
def cancel_ends_here() -> Iterator[None]:
    """Around a flow called in this process (a command's run): a run it stopped at the UI's Cancel
    (`stopped_at_cancel`) comes out as Prefect's `CancelledRun`, as a cancelled run's last state request does, not as
    the SIGTERM that stopped it. The cancel intent is consumed and the process's SIGTERM handler put back (Prefect's
    engine leaves both for its entry point, which ends the process), so a later run in this process does not take
    an unrelated SIGTERM for a cancel."""
    from prefect.exceptions import CancelledRun, TerminationSignal

    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    _stopped_here.clear()
    try:
        yield
    except TerminationSignal:
        if not _stopped_here.is_set():
            raise
        _stopped_here.clear()
        from prefect._internal import control_listener

        control_listener.clear_intent()
        if main and before is not None:
            signal.signal(signal.SIGTERM, before)
        raise CancelledRun(f"the flow run was {CANCELLED_MESSAGE}") from None

"""The LLM gate's slots go to the oldest group's weeks first, and a slow first reservation is asked again at
once (bench/backfill at 500 ms, concurrency 8); flows end without joining Prefect's heartbeat."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any

import pytest


def test_a_freed_slot_goes_to_the_lowest_turn_not_the_first_to_arrive() -> None:
    from chronicle.services.llm_gate import _Slots

    slots = _Slots(1)
    slots.acquire(None)  # the one slot, held
    got: list[str] = []
    turns = {"late group": (2.0, 0), "early group, 2nd week": (1.0, 1), "early group, 1st week": (1.0, 0)}
    threads = []
    for i, (name, turn) in enumerate(turns.items(), start=1):
        def take(name: str = name, turn: tuple[float, int] = turn) -> None:
            slots.acquire(turn)
            got.append(name)
            slots.release()
        threads.append(threading.Thread(target=take))
        threads[-1].start()
        assert slots.wait_for_waiters(i, timeout_s=30)  # queued in this order: late group first
    slots.release()
    for thread in threads:
        thread.join(timeout=30)
    assert got == ["early group, 1st week", "early group, 2nd week", "late group"]
    slots.acquire(None)  # every slot came back
    with pytest.raises(ValueError):
        slots.release()
        slots.release()


def _requests(monkeypatch: pytest.MonkeyPatch, wanted: int, refused: int) -> list[tuple[int, float | None]]:
    """The requests for `llm` slots a reservation of `wanted` makes when the first `refused` time out."""
    import prefect.concurrency.sync

    import chronicle.services.llm_gate as gate
    from chronicle.settings import Settings

    asked: list[tuple[int, float | None]] = []

    @contextmanager
    def concurrency(name: str, occupy: int, strict: bool, timeout_seconds: float | None, lease_duration: float) -> Any:
        assert lease_duration == gate.LEASE_S
        asked.append((occupy, timeout_seconds))
        if len(asked) <= refused:
            raise TimeoutError
        yield

    monkeypatch.setattr(prefect.concurrency.sync, "concurrency", concurrency)
    monkeypatch.setattr(gate, "ensure_llm_limit", lambda slots: True)
    monkeypatch.setenv("CHRONICLE_LLM_CONCURRENCY", "8")
    with gate.reserve_llm(Settings(), wanted) as held:
        assert (held.source, held.slots) == ("prefect", asked[-1][0])
    return asked


def test_a_slow_first_reservation_is_asked_again_for_the_same_share(monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.services.llm_gate import QUICK_TRY_S, WAIT_S

    # The API answered 503 and the client waits 2 s before asking again.
    assert _requests(monkeypatch, 8, refused=1) == [(8, QUICK_TRY_S), (8, WAIT_S)]


def test_a_reservation_halves_its_share_and_never_waits_unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Down to one slot, asked again for ever, each request bounded: Prefect's slot service finishes a request in
    flight before its process may exit, so an unbounded one kept a cancelled run alive until its runner killed it."""
    from chronicle.services.llm_gate import QUICK_TRY_S, WAIT_S

    assert _requests(monkeypatch, 8, refused=7) == [(8, QUICK_TRY_S), (8, WAIT_S), (4, WAIT_S), (2, WAIT_S),
                                                   (1, WAIT_S), (1, WAIT_S), (1, WAIT_S), (1, WAIT_S)]
    assert _requests(monkeypatch, 1, refused=3)[1:] == [(1, WAIT_S)] * 3


def test_flow_runs_leave_the_heartbeat_thread_to_stop_by_itself() -> None:
    import prefect.flow_engine

    from chronicle.services.run_tracking import unjoined_heartbeats  # importing it installs it, as every flow does

    patched = prefect.flow_engine._send_heartbeats
    assert getattr(patched, "_chronicle_unjoined", False)
    assert unjoined_heartbeats() and prefect.flow_engine._send_heartbeats is patched  # idempotent


def test_no_llm_call_starts_through_a_reservation_that_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cancelled run's main thread gives its slots back on its way out while its week threads go on: from then on
    none of them starts a call (one in flight finishes), also one that was waiting for a slot."""
    import chronicle.services.llm_gate as gate
    from chronicle.settings import Settings

    monkeypatch.setattr(gate, "ensure_llm_limit", lambda slots: False)  # the process-local slots: no API needed
    settings = Settings(llm_concurrency=3)
    waited: list[BaseException] = []

    def week() -> None:
        try:
            with held.slot():
                raise AssertionError("a call started after its reservation ended")
        except BaseException as exc:
            waited.append(exc)

    with gate.reserve_llm(settings, 3) as held:
        in_flight = [held.slot() for _ in range(3)]
        for slot in in_flight:
            slot.__enter__()  # every slot busy with a call
        waiting = threading.Thread(target=week)
        waiting.start()
        assert held._semaphore.wait_for_waiters(1, timeout_s=30)
    for slot in in_flight:  # the calls in flight answer after the run stopped
        slot.__exit__(None, None, None)
    waiting.join(timeout=30)
    assert [type(e) for e in waited] == [gate.ReservationEnded]
    with pytest.raises(gate.ReservationEnded), held.slot():
        pass
    with gate.reserve_llm(settings, 3) as again, again.slot():  # every slot came back
        assert again.slots == 3

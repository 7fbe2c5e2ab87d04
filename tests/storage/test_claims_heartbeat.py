"""Claims on the embedded file keep one heartbeat: `hold` and a week's own lease (`Leases.acquire`) renew through
`Leases`, and a held claim outlives its ttl while its holder works."""

from __future__ import annotations

import threading
import time

from chronicle.storage import claims


def _beats() -> set[str]:
    # Chronicle's background threads but the weekly tasks' artifact publisher (a flow test earlier in the same
    # process may have left its idle pool threads): what is left are claim heartbeats.
    return {t.name for t in threading.enumerate()
            if t.name.startswith("chronicle-") and not t.name.startswith("chronicle-artifacts")}


def _claim(settings, key: str, owner: str, ttl_s: float) -> bool:
    return claims.take(settings, [key], owner, ttl_s)[key].won


def _expiry_ms(settings, key: str) -> int:
    with claims.coordination(settings) as coord:
        return coord.query(f"SELECT epoch_ms(expires_at) FROM {claims.TABLE} WHERE key = '{key}'")[0][0]


def _until_lapsed(settings, expiry_ms: int, timeout_s: float = 60.0) -> None:
    """Wait until the database's clock (the one claims expire by) has passed `expiry_ms`: the claim that had this
    expiry is held after that only if the heartbeat renewed it. An event, not a guess of how long a beat takes."""
    deadline = time.monotonic() + timeout_s
    while True:
        with claims.coordination(settings) as coord:
            if coord.query(f"SELECT epoch_ms(now()) > {expiry_ms}")[0][0]:
                return
        assert time.monotonic() < deadline, "the database's clock did not pass the claim's expiry"
        time.sleep(0.05)  # between reads of the clock, leaving the file to the heartbeat


def test_hold_renews_past_the_ttl_on_the_leases_heartbeat(settings) -> None:
    with claims.hold(settings, ["k:1", "k:2"], ttl_s=3.0) as owner:
        assert _beats() == {"chronicle-leases"}
        _until_lapsed(settings, max(_expiry_ms(settings, "k:1"), _expiry_ms(settings, "k:2")))  # past the ttl
        assert not _claim(settings, "k:1", "someone-else", ttl_s=5)
        assert claims.holder(settings, "k:2") == owner
    assert _claim(settings, "k:1", "someone-else", ttl_s=5)  # released when the block ended


def test_an_acquired_lease_renews_while_working_and_is_released_after(settings) -> None:
    seen = []
    with claims.Leases(settings, ttl_s=3.0) as leases:
        assert leases.acquire("once", timeout_s=30).won
        _until_lapsed(settings, _expiry_ms(settings, "once"))  # past the ttl: only renewals keep it
        seen.append(_claim(settings, "once", "someone-else", ttl_s=5))
    assert seen == [False]
    assert claims.holder(settings, "once") is None


def test_threads_working_for_an_owner_join_its_open_leases_under_its_one_heartbeat(settings) -> None:
    """A fan-out's week tasks find its leases by owner (`Leases.of`) and take a busy key on them: one heartbeat
    for all, and the key is released with the others when the fan-out's leases close."""
    with claims.Leases(settings, ttl_s=30.0) as fan_out:
        fan_out.take(["week:1"])
        found: list[claims.Leases | None] = []
        worker = threading.Thread(target=lambda: found.append(claims.Leases.of(fan_out.owner)))
        worker.start()
        worker.join()
        assert found == [fan_out]
        assert fan_out.acquire("week:2", timeout_s=30).won  # a key the bulk take did not get, taken by a task
        assert _beats() == {"chronicle-leases"}
        assert {claims.holder(settings, k) for k in ("week:1", "week:2")} == {fan_out.owner}
    assert claims.Leases.of(fan_out.owner) is None
    assert claims.Leases.of(None) is None
    assert claims.holder(settings, "week:2") is None


def test_a_heartbeat_does_not_deadlock_with_a_window_that_ends_claims(settings) -> None:
    """The report writer ends week claims (`Leases.forget`) inside its held window of the file; a heartbeat that
    fell due meanwhile must wait for the window before it takes the owner's lock, not hold that lock while it
    waits (the opposite order hung a backfill for good)."""
    from chronicle.storage.db import connect, held_window

    with claims.Leases(settings, ttl_s=0.3) as leases:
        assert leases.take(["week:A", "week:B"])["week:A"].won
        forgot = threading.Event()
        with held_window(settings):
            with connect(settings) as conn:  # the window is open: this thread holds it
                conn.execute("SELECT 1")
            time.sleep(0.3)  # the heartbeat (every 0.1 s) is now waiting for the window
            ender = threading.Thread(target=lambda: (leases.forget(["week:A"]), forgot.set()), daemon=True)
            ender.start()
            ender.join(timeout=5)
            assert forgot.is_set(), "forgetting a claim inside a window waited on the heartbeat, which waits on it"
        assert not leases.holds("week:A") and leases.holds("week:B")


def test_leases_end_in_one_window_and_leave_other_owners_keys(settings, monkeypatch) -> None:
    """A fan-out cancelled mid-way gives back every week it still leases as it unwinds, inside the grace Prefect's
    runner allows before SIGKILL: one write window for all of them (a commit and a checkpoint each on the embedded
    file, seconds on a busy disk), and a key another owner took over meanwhile stays that owner's."""
    from chronicle.storage import files

    keys = [f"week:P:2026{w:02d}" for w in range(1, 9)]
    with claims.Leases(settings, owner="A", ttl_s=60) as leases:
        assert all(t.won for t in leases.take(keys).values())
        claims.release(settings, [keys[0]], "A")  # A's claim on the first week ends and B takes it
        assert _claim(settings, keys[0], "B", ttl_s=60)
        windows = []
        real = files.connect_file

        def counted(settings, read_only):
            windows.append(read_only)
            return real(settings, read_only)

        monkeypatch.setattr(files, "connect_file", counted)
    assert windows == [False]
    assert claims.holder(settings, keys[0]) == "B"
    assert [claims.holder(settings, k) for k in keys[1:]] == [None] * 7

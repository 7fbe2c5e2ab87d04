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


def test_hold_renews_past_the_ttl_on_the_leases_heartbeat(settings) -> None:
    with claims.hold(settings, ["k:1", "k:2"], ttl_s=4.0) as owner:
        assert _beats() == {"chronicle-leases"}
        time.sleep(6.0)  # 1.5 ttls (generous: a beat opens the file, slow on a loaded machine)
        assert not _claim(settings, "k:1", "someone-else", ttl_s=5)
        assert claims.holder(settings, "k:2") == owner
    assert _claim(settings, "k:1", "someone-else", ttl_s=5)  # released when the block ended


def test_an_acquired_lease_renews_while_working_and_is_released_after(settings) -> None:
    seen = []
    with claims.Leases(settings, ttl_s=4.0) as leases:
        assert leases.acquire("once", timeout_s=30).won
        time.sleep(6.0)
        seen.append(_claim(settings, "once", "someone-else", ttl_s=5))
    assert seen == [False]
    assert claims.holder(settings, "once") is None

"""Claims on both topologies: lease semantics in one process, and N processes racing for one key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lake.helpers import WAIT_FOR_GO, child_env, finish, settings_for, start_together

N_PROCS = 4


@pytest.fixture(params=["embedded", "lake"])
def backend(request: pytest.FixtureRequest, home: Path) -> tuple[str, dict[str, str]]:
    """(name, environment) of one topology; the lake one gets a fresh catalog database and prefix."""
    if request.param == "embedded":
        return "embedded", {}
    return "lake", request.getfixturevalue("lake_env")


def test_claim_expire_renew_release(backend: tuple[str, dict[str, str]], home: Path) -> None:
    from chronicle.storage import claims

    s = settings_for(home, backend[1])

    def claim(key: str, owner: str, ttl_s: float = 10.0) -> bool:
        return claims.take(s, [key], owner, ttl_s)[key].won

    assert claim("week:P:202605", "A", ttl_s=60)
    assert not claim("week:P:202605", "B", ttl_s=60)
    assert claims.holder(s, "week:P:202605") == "A"
    assert claim("week:P:202605", "A", ttl_s=0.001)                # A renews to an (almost) expired claim
    b = claims.Leases(s, owner="B", ttl_s=60)
    b.acquire("week:P:202605", timeout_s=30)                       # a waiter sees it expire and takes over
    assert not claim("week:P:202605", "A")                         # A learns it lost the claim
    claims.release(s, ["week:P:202605"], "A")                      # not A's any more: no effect
    assert claims.holder(s, "week:P:202605") == "B"
    b.close()                                                      # B's leases end: the key is released
    assert claims.holder(s, "week:P:202605") is None
    assert claim("o'hare; DROP TABLE x", "C")                      # keys are quoted, never SQL


RACE = WAIT_FOR_GO + """
import os
from pathlib import Path
from chronicle.settings import Settings
from chronicle.storage import claims
s = Settings()
won = claims.take(s, ["week:XH201:202605"], claims.new_owner(), ttl_s=120)["week:XH201:202605"].won
print("WON" if won else "LOST", flush=True)
sys.stdin.read()  # stay alive until every racer has tried: a winner that is gone frees its key (embedded)
"""

RUN_ONCE = WAIT_FOR_GO + """
import json
from pathlib import Path
from chronicle.settings import Settings
from chronicle.storage import claims
s = Settings()
result_file, work_log = Path(sys.argv[2]), Path(sys.argv[3])

def work():
    with work_log.open("a") as f:          # one line per time the expensive work really ran
        f.write("ran\\n")
    result_file.write_text(json.dumps({"report": "week 5"}))
    return "generated"

def reuse():
    return "cached" if result_file.exists() else None

with claims.Leases(s, ttl_s=60) as leases:  # as a week without a fan-out lease takes its key (`week_lease`)
    leases.acquire("week:XH201:202605", timeout_s=600)
    outcome = reuse() or work()
print(outcome, flush=True)
"""


# Everything but the first claim is done before READY, so the racers' first statements on a fresh catalog —
# creating the claims table — start within milliseconds of each other.
FIRST_CLAIMS = """
import sys, time
from pathlib import Path
from chronicle.settings import Settings
from chronicle.storage import claims, lake
s = Settings()
lake.session(s)
print("READY", flush=True)
while not Path(sys.argv[1]).exists():
    time.sleep(0.001)
print("WON" if claims.take(s, [sys.argv[2]], claims.new_owner(), ttl_s=120)[sys.argv[2]].won else "LOST", flush=True)
"""


def test_first_claims_on_a_fresh_catalog_create_its_table_once(lake_env: dict[str, str], tmp_path: Path) -> None:
    """PostgreSQL's CREATE TABLE IF NOT EXISTS fails one of two processes creating a table at once (a unique
    index of its catalog); the first claims of many workers on a new lake must all get an answer."""
    n = 8
    envs = [child_env(tmp_path / "home", lake_env) for _ in range(n)]
    procs = start_together(FIRST_CLAIMS, [[f"week:P:{i}"] for i in range(n)], envs, tmp_path / "go", tmp_path)
    assert sorted(o.strip() for o in finish(procs)) == ["WON"] * n


def test_processes_race_for_one_key(backend: tuple[str, dict[str, str]], home: Path, tmp_path: Path) -> None:
    envs = [child_env(tmp_path / "home", backend[1]) for _ in range(N_PROCS)]  # embedded: one shared file
    procs = start_together(RACE, [[] for _ in range(N_PROCS)], envs, tmp_path / "go", tmp_path, stdin=True)
    # Every racer answers while all of them still live (the winner's claim is not orphaned yet), then they end.
    outs = [p.stdout.readline().strip() for p in procs]
    finish(procs)
    assert sorted(outs) == ["LOST"] * (N_PROCS - 1) + ["WON"], outs


def test_losers_wait_and_reuse_the_winners_result(backend: tuple[str, dict[str, str]], home: Path,
                                                  tmp_path: Path) -> None:
    result, log = tmp_path / "result.json", tmp_path / "work.log"
    envs = [child_env(tmp_path / "home", backend[1]) for _ in range(N_PROCS)]
    procs = start_together(RUN_ONCE, [[str(result), str(log)] for _ in range(N_PROCS)], envs, tmp_path / "go",
                           tmp_path)
    outs = sorted(o.strip() for o in finish(procs))
    assert log.read_text().splitlines() == ["ran"], "the work ran more than once"
    assert outs == ["cached"] * (N_PROCS - 1) + ["generated"], outs


def test_a_dead_holder_frees_its_keys_at_once_only_on_the_embedded_file(backend: tuple[str, dict[str, str]],
                                                                        home: Path) -> None:
    """Embedded: every holder is on this machine, so a claim whose process is gone (kill -9) is taken at once
    instead of after its ttl; a live holder keeps it. Lake: a pid of "this host" proves nothing, the ttl rules."""
    import socket
    import subprocess
    import sys

    from chronicle.storage import claims

    s = settings_for(home, backend[1])
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead = f"{socket.gethostname()}:{int(done.stdout)}:1:deadbeef"
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE) as alive_proc:
        alive = f"{socket.gethostname()}:{alive_proc.pid}:1:cafebabe"
        assert claims.take(s, ["week:P:1"], dead, ttl_s=600)["week:P:1"].won
        assert claims.take(s, ["week:P:2"], alive, ttl_s=600)["week:P:2"].won
        taken = claims.take(s, ["week:P:1", "week:P:2"], "me", ttl_s=60)
        alive_proc.stdin.close()
    assert not taken["week:P:2"].won and claims.holder(s, "week:P:2") == alive  # a live holder keeps its key
    if backend[0] == "embedded":
        assert taken["week:P:1"].won and claims.holder(s, "week:P:1") == "me"
    else:
        assert not taken["week:P:1"].won and claims.holder(s, "week:P:1") == dead

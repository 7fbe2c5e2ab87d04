"""Two distillations of one window at once. The ledger recovery (NOOP -> ADD for a run that stored
memories and was killed before writing their events) must only touch runs that are really gone — the same
liveness rule as `chronicle runs` and the claims — never a run that is still working (64 ADD rows for 40
memories before)."""

from __future__ import annotations

import os
import socket
import subprocess
from datetime import datetime
from pathlib import Path

import psutil
import pytest

from chronicle.settings import MINILM_EMBEDDING_MODEL
from tests.memory.test_store import mem

NOW = datetime(2026, 3, 23, 9, 0)


def _run_of(settings, run_id: str, pid: int, started: float | None) -> None:
    from chronicle.storage import pipeline_runs as runs
    from chronicle.storage.db import write

    def record(conn) -> None:
        runs.run_started(conn, run_id, "distill-memory", {})
        runs.set_process(conn, run_id, None, socket.gethostname(), pid, started)

    write(settings, record)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_recovery_leaves_a_working_runs_memories_to_it(home: Path, monkeypatch: pytest.MonkeyPatch, embedder) -> None:
    from chronicle.services.ledger import reconcile_events, reconcile_orphans
    from chronicle.settings import Settings
    from chronicle.storage.memory.store import MemoryStore

    monkeypatch.setenv("EMBEDDING_MODEL", MINILM_EMBEDDING_MODEL)
    settings = Settings()
    store = MemoryStore(settings, embedder)
    memories = [mem("王老师 prefers tea in the morning"), mem("the SAE report is due every Friday")]
    # Run A is working (this very process): it has stored its memories, its events come at its end.
    _run_of(settings, "run-a", os.getpid(), psutil.Process().create_time())
    assert [e.event for e in store.upsert(memories, created=NOW, flow_run_id="run-a")] == ["ADD", "ADD"]
    # Run B distils the same window meanwhile: exact duplicates.
    seen_by_b = store.upsert(memories, created=NOW, flow_run_id="run-b")
    assert [e.event for e in seen_by_b] == ["NOOP", "NOOP"]

    assert [e.event for e in reconcile_events(settings, seen_by_b, set(), "run-b")] == ["NOOP", "NOOP"]
    assert reconcile_orphans(settings, "run-b") == 0  # A's rows are A's to record

    # A is killed before its ledger write: now B's recovery is what keeps the ledger true.
    _run_of(settings, "run-a", _dead_pid(), None)
    assert [e.event for e in reconcile_events(settings, seen_by_b, set(), "run-b")] == ["ADD", "ADD"]
    assert reconcile_orphans(settings, "run-b") == 2

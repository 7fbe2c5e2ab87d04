"""Child processes that run a flow, and a SIGKILL whose clock starts when the flow starts.

Timing kills from process start would put kill points into interpreter and Prefect imports, whose
duration varies a lot on a loaded machine. The drivers here print `MARK` right before
calling the flow; `run_marked` times an undisturbed run from that mark (tests then read from DuckDB
when the flow body ran and wrote), and `kill_marked` kills that long after the mark, so seeded kill
points (`killer.kill_points`, one per slice of the window: `spread_points`) land inside the writes.
`Pace` keeps them there when the machine's load changes during the test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

MARK = "CHRONICLE-FLOW-START"

# Backfill every week of one project (offline engine: deterministic, holds no LLM slot).
WEEKLY_DRIVER = f"""
import sys
from chronicle.flows.backfill_weeks import backfill_weeks
print({MARK!r}, flush=True)
backfill_weeks(project_id=sys.argv[1])
"""

# Backfill like WEEKLY_DRIVER, dying by its own SIGKILL at the n-th report write window (argv[2]): "inside"
# (argv[3]) once the window's reports are written but before its commit, "after" right after the commit.
# Random kill points land between two windows only by luck; these land there every time.
WEEKLY_DIES_AT_WRITE_DRIVER = f"""
import os, signal, sys
import chronicle.storage.reports as writer
from chronicle.flows.backfill_weeks import backfill_weeks
n, inside, windows = int(sys.argv[2]), sys.argv[3] == "inside", [0]
save_reports, write = writer.save_reports, writer.ReportWriter._write
def dying_save(conn, rows):
    windows[0] += 1
    out = save_reports(conn, rows)
    if inside and windows[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)
    return out
def dying_write(self, tickets):
    write(self, tickets)
    if not inside and windows[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)
writer.save_reports, writer.ReportWriter._write = dying_save, dying_write
print({MARK!r}, flush=True)
backfill_weeks(project_id=sys.argv[1])
"""

# Distill the notes of (until - days, until].
DISTILL_DRIVER = f"""
import sys
from datetime import date
from chronicle.flows.distill_memory import distill_memory
print({MARK!r}, flush=True)
distill_memory(days=int(sys.argv[1]), until=date.fromisoformat(sys.argv[2]))
"""

# The same run, which SIGKILLs itself as the ledger's transaction is about to begin: the memories are stored and
# the knowledge files written, the ledger is not. Random kill points land in that window only by luck (it is a
# few milliseconds of a several-second run); this one lands there every time.
DISTILL_DIES_BEFORE_LEDGER_DRIVER = f"""
import os, signal, sys
from datetime import date
import chronicle.services.distill as use_cases
from chronicle.flows.distill_memory import distill_memory
use_cases.record_run = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
print({MARK!r}, flush=True)
distill_memory(days=int(sys.argv[1]), until=date.fromisoformat(sys.argv[2]))
"""

# Write a growing MEMORY.md through the real knowledge-file writer, one memory per write (no Prefect).
KNOWLEDGE_DRIVER = f"""
import sys
from pathlib import Path
from chronicle.distill.knowledge import sync_file
from chronicle.redaction.redactor import Redactor
from tests.reliability.procs import knowledge_item
print({MARK!r}, flush=True)
for k in range(int(sys.argv[2])):
    sync_file(Path(sys.argv[1]), "MEMORY.md", [knowledge_item(k)], keep=3, redactor=Redactor.build())
"""
REPO = Path(__file__).resolve().parents[2]


def knowledge_item(k: int):
    """The k-th memory of KNOWLEDGE_DRIVER: big (the write takes a while), three note sources."""
    import hashlib

    from chronicle.distill.sections import Item

    digest = hashlib.sha256(str(k).encode()).hexdigest()
    # Words, not hex runs: the writer's gate would redact a run that looks like a key (and take its time).
    text = f"memory {k}: " + " ".join(f"entry{k}-{j}" for j in range(1500))
    return Item(memory_id=f"2026-04-0{1 + k % 3}-{digest[:12]}", content_hash=digest, text=text,
                day=f"2026-04-0{1 + k % 3}", source=f"2026-04-0{1 + k % 3}.md")


def child_env(home: Path, api_url: str, **extra: str) -> dict[str, str]:
    """This test's CHRONICLE_HOME and the session's Prefect API (no ephemeral server start-up in the child)."""
    return {**os.environ, "CHRONICLE_HOME": str(home), "PREFECT_API_URL": api_url,
            "PREFECT_LOGGING_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), **extra}


def _start(cmd: list[str], env: dict[str, str], cwd: Path, err) -> tuple[subprocess.Popen, float]:
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == MARK:
            return proc, time.monotonic()
    proc.wait()
    return proc, time.monotonic()


def run_marked(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> tuple[float, datetime]:
    """Run to completion: (seconds from the mark to exit, UTC wall time of the mark, naive like DuckDB's
    timestamps). Raises with the child's stderr on failure."""
    with tempfile.TemporaryFile("w+") as err:
        proc, t0 = _start(cmd, env, cwd, err)
        marked_at = datetime.now(UTC).replace(tzinfo=None)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        proc.stdout.close()
        if rc != 0:
            err.seek(0)
            raise RuntimeError(f"{cmd[-3:]} failed ({rc}):\n{err.read()[-4000:]}")
        return time.monotonic() - t0, marked_at


def _kill_after(cmd: list[str], env: dict[str, str], cwd: Path, after_s: float) -> float | None:
    """SIGKILL the child `after_s` seconds after its mark: None if it was still running then, else the
    seconds from its mark to its exit."""
    proc, t0 = _start(cmd, env, cwd, subprocess.DEVNULL)
    try:
        proc.wait(timeout=after_s)
        return time.monotonic() - t0
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None
    finally:
        proc.stdout.close()


def kill_marked(cmd: list[str], env: dict[str, str], cwd: Path, after_s: float) -> bool:
    """SIGKILL the child `after_s` seconds after its mark; True if it was still running then."""
    return _kill_after(cmd, env, cwd, after_s) is None


class Pace:
    """Kill points drawn from an undisturbed run of `duration` seconds, kept inside later runs' work.

    On a shared machine the load changes during a test: a run that ends before its kill point shows the
    machine got faster than during the undisturbed run. Its point is then tried again in a fresh folder,
    scaled to that run's duration, and so are the later points (an event — the run ended early — not a guess).
    """

    def __init__(self, duration: float, tries: int = 3) -> None:
        self.duration, self.tries, self.scale = duration, tries, 1.0

    def kill(self, cmd: list[str], cwd: Path, point: float, fresh: Callable[[str], dict[str, str]],
             name: str) -> tuple[bool, str]:
        """(killed, folder name): `fresh(name)` prepares a fresh folder and returns the child's environment;
        retries are named `name-retryN`. Not killed means every try ended before its point."""
        for attempt in range(self.tries):
            used = name if attempt == 0 else f"{name}-retry{attempt}"
            ran = _kill_after(cmd, fresh(used), cwd, point * self.scale)
            if ran is None:
                return True, used
            self.scale = min(self.scale, ran / self.duration)
        return False, used


def spread_points(seed: int, n: int, start: float, end: float) -> list[float]:
    """`n` seeded kill points, one per equal slice of [start, end], so they cover the whole run."""
    from tests.reliability.killer import kill_points

    step = (end - start) / n
    return [kill_points(seed + i, 1, start + i * step, start + (i + 1) * step)[0] for i in range(n)]

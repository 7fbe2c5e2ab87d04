"""A foreign process holding the DuckDB file, released by the test (an event), never after a fixed time.

It stands for an analyst's `duckdb chronicle.duckdb` shell: it takes no Chronicle lock, so Chronicle must
wait for it. The test releases it once the run has said that it waits — on a busy machine a holder that
slept a fixed time could let go before the run even started, and the test would prove nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_CODE = """
import duckdb, sys
conn = duckdb.connect(sys.argv[1])
print("held", flush=True)
sys.stdin.readline()  # until the test says so (or dies: EOF)
conn.close()
print("released", flush=True)
"""


class DuckDBHolder:
    def __init__(self, db: Path) -> None:
        db.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-c", _CODE, str(db)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "held"
        self.released = False

    def release(self, timeout: float = 60.0) -> None:
        """Close the file and wait until the holder says it did (idempotent; safe from another thread)."""
        if self.released:
            return
        self.released = True
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write("go\n")
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        self.proc.wait(timeout=timeout)

    def __enter__(self) -> DuckDBHolder:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.release()

"""Run a command in a real subprocess and SIGKILL it at a seeded random moment.

The moment is drawn from a window that is measured first (one undisturbed run), so the kill
points land inside the work rather than in interpreter start-up.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path


def run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> float:
    """Run to completion; return wall seconds. Raises on a non-zero exit."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return time.perf_counter() - t0


def kill_at(cmd: list[str], env: dict[str, str], cwd: Path, after_s: float) -> bool:
    """Start `cmd`, SIGKILL it after `after_s` seconds. Returns True if it was killed mid-run."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        proc.wait(timeout=after_s)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def kill_points(seed: int, n: int, start: float, end: float) -> list[float]:
    rng = random.Random(seed)
    return sorted(rng.uniform(start, end) for _ in range(n))


def python_cmd(code: str) -> list[str]:
    return [sys.executable, "-c", code]

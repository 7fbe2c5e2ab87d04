"""Seeded kill points and the `python -c` command the kill tests run in a real subprocess.

Starting, timing and killing those subprocesses is `procs.py` (`run_marked`, `kill_marked`), whose
clock starts at the child's mark so kill points land in the work, not in interpreter start-up.
"""

from __future__ import annotations

import random
import sys


def kill_points(seed: int, n: int, start: float, end: float) -> list[float]:
    rng = random.Random(seed)
    return sorted(rng.uniform(start, end) for _ in range(n))


def python_cmd(code: str) -> list[str]:
    return [sys.executable, "-c", code]

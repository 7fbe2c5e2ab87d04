"""Shared bench helpers: one RESULT line per measure and a JSON file under bench/out/, and the machine's load.

A figure taken while other processes kept the CPU busy is not the same figure: `LoadSampler` measures, over
the interval a bench ran, the 1-minute load average and how much of the machine's CPU went to processes
other than the bench (from /proc/stat minus the bench's own CPU time). `bench/run_all.py` wraps every bench
in one, so every figure of the README table says how busy the machine was.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "out"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        cores = 0
    return f"{cpu}, {cores} cores, Python {platform.python_version()}"


def result(name: str, *, measure: str, ours: float, baseline: float, baseline_name: str, unit: str,
           goal: str, ok: bool, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Print the RESULT line and write `bench/out/<name>.json`."""
    ratio = ours / baseline if baseline else float("nan")
    data = {"name": name, "measure": measure, "ours": ours, "baseline": baseline, "baseline_name": baseline_name,
            "unit": unit, "ratio": ratio, "goal": goal, "met": ok, "machine": machine(), **(extra or {})}
    OUT.mkdir(exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(data, indent=2, default=str))
    print(f"RESULT name={name} ours={ours:.4g}{unit} baseline={baseline:.4g}{unit} ({baseline_name}) "
          f"ratio={ratio:.3f} goal={goal} met={ok}")
    return data


def run_py(code: str) -> str:
    """Run `code` in a fresh interpreter (clean peak-RSS numbers); returns its stdout."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"bench subprocess failed:\n{proc.stderr[-4000:]}")
    return proc.stdout


BUSY_SHARE = 0.25
"""Other processes using more than this share of the machine's CPU while a bench ran: the figure is marked busy."""


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat; (0, 0) where there is none."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def _own_cpu_s() -> float:
    """CPU seconds of this process and of its children waited for (a bench run as a subprocess counts)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class LoadSampler:
    """Context manager: the machine's load while the block ran (see the module docstring)."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self.loads: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start: tuple[tuple[int, int], float, float] | None = None
        self._end: tuple[tuple[int, int], float, float] | None = None

    def _sample(self) -> None:
        while True:
            self.loads.append(os.getloadavg()[0])
            if self._stop.wait(self.interval_s):
                return

    def __enter__(self) -> LoadSampler:
        self._start = (_cpu_jiffies(), _own_cpu_s(), _monotonic())
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self._end = (_cpu_jiffies(), _own_cpu_s(), _monotonic())

    def record(self) -> dict[str, Any]:
        """`load_avg_1m` (median of the samples), `load_avg_1m_max`, `others_cpu_share` (0..1 of all cores),
        `cores`, `busy` (others above `BUSY_SHARE`)."""
        assert self._start is not None and self._end is not None, "use LoadSampler as a context manager"
        (b0, t0), own0, m0 = self._start
        (b1, t1), own1, m1 = self._end
        cores = os.cpu_count() or 1
        ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        total_s = (t1 - t0) / ticks
        others = None
        if total_s > 0:
            others = max(0.0, ((b1 - b0) / ticks - (own1 - own0)) / total_s)
        loads = sorted(self.loads) or [os.getloadavg()[0]]
        return {"load_avg_1m": loads[len(loads) // 2], "load_avg_1m_max": loads[-1],
                "others_cpu_share": others, "cores": cores, "measured_s": m1 - m0,
                "busy": others is not None and others > BUSY_SHARE}


def load_sampler() -> LoadSampler:
    return LoadSampler()


def _monotonic() -> float:
    import time

    return time.monotonic()

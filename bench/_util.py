"""Shared bench helpers: one RESULT line per measure and a JSON file under bench/out/."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "out"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        import os

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

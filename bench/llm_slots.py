"""Whether the LLM gate's second concurrency mechanism earns its place.

Every LLM call is bounded by Prefect's global concurrency limit `llm`. `services/llm_gate.py` takes it once per
fan-out (`reserve_llm`: up to `llm_concurrency` slots for the whole backfill or distill) and hands those slots to
the run's calls with an in-process semaphore (`llm_slot`). The one-mechanism alternative is to take the global
limit around each call (`prefect.concurrency.sync.concurrency("llm", occupy=1)`), which is what this bench
compares it with, on the same API, in the same run:

- one real Prefect API (the test harness: the SQLite-backed server `chronicle server start` runs), limit `llm`
  of `--slots` slots;
- `--calls` calls from `4 x slots` threads (a backfill keeps four weeks in flight per slot), each call a sleep of
  `--latency` seconds standing for the model;
- ours: one reservation, each call in `llm_slot`; baseline: each call in its own `concurrency(...)` (strict,
  lease of 60 s as the gate's); the two alternate, `--repeat` times each, and the median wall time of each is
  kept. Ideal = calls x latency / slots.

Figure: wall time, ours / per-call limit. Goal: ≤ 0.9x at every latency measured (default 0.5 s, a fast model);
if the per-call limit were as fast, the reservation and its local slots would go. Load recorded.
`python -m bench.llm_slots [--latency 0.5,2] [--calls 64] [--slots 8]`.
"""

from __future__ import annotations

import argparse
import contextvars
import os
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench._util import load_sampler, result
from bench._weekly_util import bench_env


def _calls(n: int, threads: int, latency: float, one_call: Any) -> float:
    """Wall time of `n` calls of `latency` seconds from `threads` threads, each call inside `one_call()`."""
    start = threading.Barrier(threads + 1)

    def worker(k: int) -> None:
        start.wait()
        for _ in range(k):
            with one_call():
                time.sleep(latency)

    share = [n // threads + (1 if i < n % threads else 0) for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        # Each thread runs in a copy of this thread's context: the reservation is found there, as a fan-out's
        # week threads find it (services/weekly.py submits them the same way).
        futures = [pool.submit(contextvars.copy_context().run, worker, k) for k in share]
        start.wait()
        t0 = time.perf_counter()
        for f in futures:
            f.result()
    return time.perf_counter() - t0


def measure(latency: float, calls: int, slots: int, repeat: int) -> dict[str, Any]:
    from prefect.concurrency.sync import concurrency

    from chronicle.services.llm_gate import LEASE_S, LIMIT_NAME, llm_slot, reserve_llm
    from chronicle.settings import Settings

    settings = Settings()
    threads = 4 * slots
    ours, baseline = [], []
    for _ in range(repeat):
        with reserve_llm(settings, slots) as gate:
            assert gate.source == "prefect", gate.source  # the API's limit, not the process-local fallback
            ours.append(_calls(calls, threads, latency, lambda: llm_slot(settings)))
        baseline.append(_calls(calls, threads, latency, lambda: concurrency(
            LIMIT_NAME, occupy=1, strict=True, lease_duration=LEASE_S)))
    return {"latency_s": latency, "ours_s": statistics.median(ours), "per_call_limit_s": statistics.median(baseline),
            "ideal_s": calls * latency / slots, "ours_runs": ours, "per_call_runs": baseline}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", default="0.5", help="comma-separated model latencies in seconds")
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_env(Path(tmp) / "home")
        os.environ["CHRONICLE_LLM_CONCURRENCY"] = str(args.slots)
        from prefect.testing.utilities import prefect_test_harness

        with prefect_test_harness(server_startup_timeout=120), load_sampler() as load:
            rows = [measure(float(x), args.calls, args.slots, args.repeat) for x in args.latency.split(",")]
    for row in rows:
        print(f"latency {row['latency_s']} s: reservation {row['ours_s']:.2f} s, per-call limit "
              f"{row['per_call_limit_s']:.2f} s, ideal {row['ideal_s']:.2f} s")
    worst = max(rows, key=lambda r: r["ours_s"] / r["per_call_limit_s"])
    result("llm_slots", measure=f"{args.calls} calls of {worst['latency_s']} s through {args.slots} `llm` slots, "
                                f"{4 * args.slots} threads: wall time with the fan-out's reservation",
           ours=worst["ours_s"], baseline=worst["per_call_limit_s"],
           baseline_name="Prefect's global limit taken around each call, same API", unit="s",
           goal="<= 0.9x the per-call limit at every latency",
           ok=all(r["ours_s"] <= 0.9 * r["per_call_limit_s"] for r in rows),
           extra={"latencies": rows, **load.record()})


if __name__ == "__main__":
    main()

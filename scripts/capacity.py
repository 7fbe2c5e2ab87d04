"""Capacity model: how long a backfill of N project-weeks takes with 1, 2, 8 and 32 workers, and what limits it.

Every week costs CPU on the worker that writes it (plan, engine, DuckDB), CPU on the Prefect API server
(task run states, events, logs, artifacts — shared by all workers), a serialised commit (a DuckDB file lock
or the lake's catalog transaction), and, with a model, LLM calls held for their latency. The backfill runs
at the slowest of four rates:

    workers  = workers x cores_per_worker x 1000 / worker_cpu_ms      (weeks/s)
    server   = server_replicas x server_cores x 1000 / server_cpu_ms
    commits  = 1000 / commit_ms                                       (one writer at a time per catalog)
    llm      = llm_concurrency / (calls_per_week x latency_s)        (the endpoint's limit)

With several workers a backfill is cut into disjoint shards, one child run per worker, and each child starts
`child_start_s` after the backfill does: the time with n workers is child_start_s + weeks / rate(n), so spreading
pays from weeks = child_start_s / (1 / rate(1) - 1 / rate(n)) on — and never when a shared part (the API server,
the commits, the LLM endpoint) already limits one worker.

The per-week figures default to the README's measured ones (bench/backfill, bench/scale); pass your own,
or `--from-bench` to read bench/out/backfill.json. Usage::

    python -m scripts.capacity                      # 156,000 project-weeks, offline engine
    python -m scripts.capacity --latency-s 2 --llm-concurrency 64
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

WORKERS = (1, 2, 8, 32)


@dataclass(frozen=True)
class Costs:
    worker_cpu_ms: float = 20.2
    """Worker CPU per generated week (bench/backfill, 0 ms latency, grouped task runs: the mean of two runs, 18.2
    and 22.1 ms; includes the in-process stub LLM server's HTTP handling, so an upper bound for the
    offline engine, whose whole flow took 7.1-10.7 ms per week in bench/offline)."""
    server_cpu_ms: float = 4.1
    """Prefect API server CPU per generated week (bench/backfill, same runs: 3.4 and 4.7 ms)."""
    commit_ms: float = 1.5
    """Serialised commit time per week: a group's window divided by its weeks (estimate: 8 report write
    windows for 156 weeks in bench/backfill; not timed apart)."""
    cores_per_worker: float = 1.0
    server_cores: float = 1.0
    server_replicas: int = 1
    llm_concurrency: int = 0
    """0 = the offline engine (no LLM limit)."""
    calls_per_week: float = 1.0
    latency_s: float = 0.0
    child_start_s: float = 25.0
    """A child run's start-up when a backfill is spread (the worker's poll, a new process, imports): 16-31 s
    measured on the 2-core development host (bench/scale, tests/lake)."""


def rates(c: Costs, workers: int) -> dict[str, float]:
    """Weeks per second each part allows."""
    out = {"workers": workers * c.cores_per_worker * 1000 / c.worker_cpu_ms,
           "API server": c.server_replicas * c.server_cores * 1000 / c.server_cpu_ms,
           "commits": 1000 / c.commit_ms if c.commit_ms > 0 else float("inf")}
    if c.llm_concurrency and c.latency_s > 0:
        out["LLM"] = c.llm_concurrency / (c.calls_per_week * c.latency_s)
    return out


def pays_from(c: Costs, workers: int) -> float | None:
    """The backfill size (weeks) from which spreading it over `workers` is faster than one worker; None: never."""
    one, many = min(rates(c, 1).values()), min(rates(c, workers).values())
    return c.child_start_s / (1 / one - 1 / many) if many > one else None


def table(c: Costs, weeks: int, workers: tuple[int, ...] = WORKERS) -> list[dict[str, str]]:
    rows = []
    for n in workers:
        r = rates(c, n)
        limit = min(r, key=lambda k: r[k])
        seconds = weeks / r[limit] + (c.child_start_s if n > 1 else 0.0)
        threshold = pays_from(c, n) if n > 1 else None
        pays = "—" if n == 1 else "never" if threshold is None else f"{threshold:,.0f} weeks"
        rows.append({"workers": str(n), "weeks/s": f"{r[limit]:.0f}", "time": _duration(seconds),
                     "bottleneck": limit,
                     "next": min((k for k in r if k != limit), key=lambda k: r[k]),
                     "spread pays from": pays})
    return rows


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def markdown(rows: list[dict[str, str]]) -> str:
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[h] for h in head) + " |" for r in rows]
    return "\n".join(lines)


def _from_bench(path: Path) -> dict[str, float]:
    data = json.loads(path.read_text())
    return {"worker_cpu_ms": data["worker_cpu_ms_per_week_0ms"], "server_cpu_ms": data["server_cpu_ms_per_week_0ms"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weeks", type=int, default=156_000, help="project-weeks (1,000 trials x 3 years)")
    for name, default in vars(Costs()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    parser.add_argument("--from-bench", type=Path, nargs="?", const=Path("bench/out/backfill.json"),
                        help="read worker/server CPU per week from a bench/backfill result")
    args = parser.parse_args(argv)
    values = {k: getattr(args, k) for k in vars(Costs())}
    if args.from_bench:
        values.update(_from_bench(args.from_bench))
    costs = Costs(**values)
    print(f"{args.weeks:,} project-weeks; per week: worker {costs.worker_cpu_ms} ms CPU, API server "
          f"{costs.server_cpu_ms} ms CPU, commit {costs.commit_ms} ms"
          + (f", {costs.calls_per_week} LLM call(s) of {costs.latency_s} s at concurrency {costs.llm_concurrency}"
             if costs.llm_concurrency else ", offline engine"))
    print(markdown(table(costs, args.weeks)))


if __name__ == "__main__":
    main()

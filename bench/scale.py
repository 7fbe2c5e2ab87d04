"""bench/scale: an offline-engine backfill of N weeks (default 120, the size of an operator's UI backfill) through
the work pool, in ONE run:

* `embedded-1`: one worker, embedded DuckDB file (the baseline of the lake's overhead);
* `lake-1`: one worker, DuckLake on PostgreSQL + S3 (moto);
* `lake-2`: two workers with `CHRONICLE_BACKFILL_SPREAD=1`. An offline backfill under 1,500 weeks is not spread
  (`services/shards.py`), so at the default 120 weeks this is a pool of two where one run does the work; the
  spread itself is measured with `--latency-ms` (below).

Everything is real and on this machine: PostgreSQL 15 (DuckLake catalog AND the Prefect server's
database), moto as the S3 endpoint, `prefect server start` on PostgreSQL, `prefect worker start` processes
polling the `chronicle-process` pool (one work queue per configuration, so the idle ones never pick up
another's run). Each repetition regenerates every week (`force`); configurations are interleaved so a
drifting machine load hits them alike; the figure is the median of the flow runs' own durations (Prefect's
start/end times of the parent run, children included). CPU seconds per component (Prefect server,
PostgreSQL, moto, workers and their flow runs) are recorded per configuration: they say where the two cores
went. The child run's start-up (created -> running: the worker's poll, a process, imports) is inside the
parent's duration, and recorded per sample (`children[].start_up_s`). Goals: lake-2 / lake-1 throughput >= 1.8x;
lake-1 time <= 1.3x embedded-1.

Two cores cannot show what a second HOST gives CPU-bound weeks: two workers here share the cores. `--latency-ms L
--max-workers 1` simulates hosts instead: every week is a model call of L ms (the fake endpoint, in this process)
and each run writes one week at a time, so a worker is a serial host whose per-week cost is L and spends no CPU
waiting. The spread should then approach child start-up + one shard (scripts/capacity.py); the figures go to
`bench/out/scale-hosts.json` (the offline ones to scale.json). A plain `python -m bench.scale` (bench/run_all)
runs that pass too, after the offline one (`HOSTS`; `--offline-only` skips it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench._util import result
from bench._weekly_util import synthetic_entries

REPO = Path(__file__).resolve().parents[1]
DEPLOYMENT = "backfill-weeks/backfill-weeks"
PROJECT = "SCALE"
CONFIGS = ("embedded-1", "lake-1", "lake-2")
QUEUES = {"embedded-1": "bench-embedded", "lake-1": "bench-lake-one", "lake-2": "default"}


def _insert(env: dict[str, str], home: Path, weeks: int) -> None:
    """The synthetic project's entries, written straight into one topology's store."""
    from chronicle.settings import Settings
    from chronicle.storage.db import transaction
    from chronicle.storage.raw_logs import insert_entries

    kwargs = {k.removeprefix("CHRONICLE_").lower(): v for k, v in env.items() if k.startswith("CHRONICLE_")}
    kwargs.pop("home", None)
    aws = {k: v for k, v in env.items() if k.startswith("AWS_")}
    saved = {k: os.environ.get(k) for k in aws}
    os.environ.update(aws)  # AWS_* are read by alias
    try:
        settings = Settings(home=home, **kwargs)
        with transaction(settings) as conn:
            insert_entries(conn, synthetic_entries(PROJECT, weeks, first="2020-W01"))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        from chronicle.storage import lake

        lake.close_sessions()


def _run(queue: str, timeout: float, max_workers: int = 0) -> dict[str, Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId
    from prefect.deployments import run_deployment

    t0 = time.perf_counter()
    run = run_deployment(DEPLOYMENT, parameters={"project_id": PROJECT, "force": True, "max_workers": max_workers},
                         timeout=timeout,
                         poll_interval=1, work_queue_name=queue)
    wall = time.perf_counter() - t0
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(run.id)
        shards = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[run.id])))
        from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

        logs = [f"{entry.timestamp:%H:%M:%S.%f} {entry.message}" for entry in client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id, *[c.id for c in shards]])))
            if "spread" in entry.message or "flow run" in entry.message.lower()]
    if not run.state or not run.state.is_completed():
        raise RuntimeError(f"backfill run {run.id} ended {run.state}")
    return {"duration_s": (run.end_time - run.start_time).total_seconds(), "wall_s": wall, "log": logs,
            "children": [{"state": c.state.name if c.state else None,
                          "start": str(c.start_time), "parent_start": str(run.start_time),
                          "start_up_s": (c.start_time - c.created).total_seconds() if c.start_time and c.created
                          else None,
                          "duration_s": (c.end_time - c.start_time).total_seconds() if c.end_time and c.start_time
                          else None} for c in shards]}


HOSTS = {"latency_ms": 250.0, "max_workers": 1, "reps": 2}
"""The simulated-hosts pass a plain `python -m bench.scale` runs after the offline one (bench/run_all's `scale-hosts`
row): what a second host gives a backfill, which two workers sharing two cores cannot show."""


def main() -> None:
    args = _arguments()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
    samples, cpu, loads = _measure(args)
    _report(args, samples, cpu, loads)
    if args.latency_ms == 0 and not args.offline_only:  # in a fresh process: Prefect's settings hold the first API
        subprocess.run([sys.executable, "-m", "bench.scale", "--weeks", str(args.weeks),
                        *(f"--{k.replace('_', '-')}={v}" for k, v in HOSTS.items())], cwd=REPO, check=True)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--weeks", type=int, default=120)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="simulate hosts: each week is a model call of this many ms (0: the offline engine)")
    parser.add_argument("--max-workers", type=int, default=0, help="weeks in flight per run (0: the setting)")
    parser.add_argument("--offline-only", action="store_true", help="skip the simulated-hosts pass (HOSTS)")
    return parser.parse_args()


_Samples = tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, float]], list[float]]
"""Per configuration its runs' samples and its mean CPU seconds per run by component; the load before each run."""


def _measure(args: argparse.Namespace) -> _Samples:
    """Start the services and the workers of every configuration, load the weeks, time the runs; all torn down."""
    from tests.lake.servers import deploy_all, lake_env, moto_server, postgres_server, prefect_env, prefect_server

    root = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, root, True)  # working folders, the embedded file, workers' logs
        pg = stack.enter_context(postgres_server())
        s3 = stack.enter_context(moto_server())
        server = stack.enter_context(prefect_server(pg, "prefect", root / "prefect"))
        os.environ["PREFECT_API_URL"] = server.api_url
        lake = lake_env(pg, s3, "lake_scale")
        base = prefect_env(PREFECT_API_URL=server.api_url, PREFECT_LOGGING_LEVEL="WARNING")
        if args.latency_ms > 0:
            base["LLM_URL"] = stack.enter_context(_slow_model(args.latency_ms / 1000)).base_url
        admin = {**base, **lake, "CHRONICLE_HOME": str(root / "admin")}
        deploy_all(admin, REPO)
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            for queue in ("bench-embedded", "bench-lake-one"):
                client.create_work_queue(name=queue, work_pool_name="chronicle-process")
        emb_home = root / "embedded-home"
        _insert({}, emb_home, args.weeks)
        _insert(lake, root / "loader", args.weeks)
        workers = _workers(stack, root, base, lake, emb_home)
        services = {"prefect-server": server.proc.pid, "postgres": pg.pid(), "moto": s3.pid}
        return _timed_runs(args, workers, services)


def _workers(stack: ExitStack, root: Path, base: dict[str, str], lake: dict[str, str],
             emb_home: Path) -> dict[str, list[Any]]:
    """Each configuration's workers, stopped when the stack closes."""
    from tests.lake.servers import start_worker

    def worker(name: str, env: dict[str, str], queue: str):
        return stack.enter_context(_stopping(start_worker(name, root / name, env, limit=1, queues=(queue,))))

    return {
        "embedded-1": [worker("embedded", {**base, "CHRONICLE_HOME": str(emb_home)}, QUEUES["embedded-1"])],
        "lake-1": [worker("lake-one", {**base, **lake, "CHRONICLE_HOME": str(root / "lake-one")},
                          QUEUES["lake-1"])],
        "lake-2": [worker(f"lake-two-{w}", {**base, **lake, "CHRONICLE_HOME": str(root / f"lake-two-{w}"),
                                            "CHRONICLE_BACKFILL_SPREAD": "1"}, QUEUES["lake-2"]) for w in "ab"],
    }


def _timed_runs(args: argparse.Namespace, workers: dict[str, list[Any]], services: dict[str, int]) -> _Samples:
    """A warm-up run per configuration, then `args.reps` rounds of one run each, with the CPU the services and the
    configuration's workers spent in it."""
    from tests.lake.servers import cpu_seconds

    samples: dict[str, list[dict[str, Any]]] = {c: [] for c in CONFIGS}
    cpu: dict[str, dict[str, float]] = {c: {} for c in CONFIGS}
    loads: list[float] = []
    for config in CONFIGS:  # warm-up: caches, first lake attach, compiled regexes in a fresh run
        _run(QUEUES[config], args.timeout, args.max_workers)
    for rep in range(args.reps):
        for config in CONFIGS:
            before = {name: cpu_seconds(pid) for name, pid in services.items()}
            before["workers"] = sum(cpu_seconds(w.proc.pid) for w in workers[config])
            loads.append(os.getloadavg()[0])
            sample = _run(QUEUES[config], args.timeout, args.max_workers)
            after = {name: cpu_seconds(pid) for name, pid in services.items()}
            after["workers"] = sum(cpu_seconds(w.proc.pid) for w in workers[config])
            sample["cpu_s"] = {k: round(after[k] - before[k], 2) for k in after}
            samples[config].append(sample)
            for k, v in sample["cpu_s"].items():
                cpu[config][k] = cpu[config].get(k, 0.0) + v / args.reps
            print(f"rep {rep + 1} {config}: {sample['duration_s']:.1f}s "
                  f"({args.weeks / sample['duration_s']:.1f} weeks/s) cpu {sample['cpu_s']} "
                  f"children {sample['children']}", flush=True)
    return samples, cpu, loads


def _report(args: argparse.Namespace, samples: dict[str, list[dict[str, Any]]], cpu: dict[str, dict[str, float]],
            loads: list[float]) -> None:
    # CPU per generated week of each component: the Prefect API server's share beside the workers'.
    per_week_ms = {c: {k: round(1000 * v / args.weeks, 2) for k, v in cpu[c].items()} for c in CONFIGS}
    for c in CONFIGS:
        print(f"{c}: CPU ms per generated week {per_week_ms[c]}")
    median = {c: statistics.median(s["duration_s"] for s in samples[c]) for c in CONFIGS}
    throughput = {c: args.weeks / median[c] for c in CONFIGS}
    speedup = throughput["lake-2"] / throughput["lake-1"]
    lake_cost = median["lake-1"] / median["embedded-1"]
    extra = {"weeks": args.weeks, "reps": args.reps, "median_s": median, "weeks_per_s": throughput,
             "speedup_2_vs_1": speedup, "lake1_vs_embedded1": lake_cost, "samples": samples,
             "cpu_s_per_run": cpu, "cpu_ms_per_week": per_week_ms,
             "load_avg_1m": loads, "load_avg_1m_median": statistics.median(loads),
             "cores": os.cpu_count()}
    if args.latency_ms > 0:
        extra |= {"latency_ms": args.latency_ms, "max_workers": args.max_workers}
        starts = [c["start_up_s"] for s in samples["lake-2"] for c in s["children"] if c["start_up_s"] is not None]
        start_up = f"{statistics.median(starts):.1f} s" if starts else "none started"
        result("scale-hosts", measure=f"{args.weeks}-week backfill on simulated hosts ({args.latency_ms:.0f} ms a week "
               f"that costs no CPU, {args.max_workers or 'default'} week(s) in flight per run) through the work pool "
               f"(lake): 2 workers vs 1; child run start-up (created to running) {start_up}",
               ours=throughput["lake-2"], baseline=throughput["lake-1"], baseline_name="1 worker, same lake",
               unit="weeks/s", goal="2 workers faster than 1", ok=speedup > 1.0, extra=extra)
        return
    result("scale", measure=f"{args.weeks}-week offline backfill through the work pool (lake): 2 workers vs 1",
           ours=throughput["lake-2"], baseline=throughput["lake-1"], baseline_name="1 worker, same lake",
           unit="weeks/s", goal="2 workers >= 1.8x 1 worker", ok=speedup >= 1.8, extra=extra)
    result("scale-lake", measure=f"{args.weeks}-week offline backfill, 1 worker: lake vs embedded file",
           ours=median["lake-1"], baseline=median["embedded-1"], baseline_name="1 worker, embedded DuckDB",
           unit="s", goal="lake <= 1.3x embedded", ok=lake_cost <= 1.3, extra=extra)


def _slow_model(latency_s: float) -> Any:
    """The fake endpoint answering every week after `latency_s` (a sleep: no CPU), with a report citing E1."""
    from tests.fakellm import FakeLLMServer

    def answer(_request: dict) -> str:
        time.sleep(latency_s)
        return "## 本周要点\n\n- 项目按计划推进，详见流水账 [E1]。\n"

    server = FakeLLMServer()
    server.responder = answer
    return server


class _stopping:
    """Stop a worker (and its flow runs) when the bench ends, whatever happened."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker

    def __enter__(self) -> Any:
        return self.worker

    def __exit__(self, *exc: object) -> None:
        self.worker.stop()


if __name__ == "__main__":
    main()

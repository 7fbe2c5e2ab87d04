"""bench/backfill: 156 weeks through `backfill_weeks` against a stub OpenAI-compatible endpoint.

Runs with the real Prefect API (test harness), DuckDB, `ChatClient` and FakeLLMServer:
1. 0 ms endpoint latency -> orchestration overhead per week (wall / weeks; goal <= 10 ms) and the CPU per
   week of this worker and of the Prefect API server apart (server goal <= 5 ms);
2. 500 ms latency, concurrency 8 -> wall vs ideal weeks x latency / concurrency (goal <= 1.15x);
3. the same backfill again -> cached: wall time and LLM calls (goal 0).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._weekly_util import bench_env, synthetic_entries, write_result

REPLY = "本周入组与随访按计划推进 [E1]。新增 AE 已按方案记录与处理，详见流水账。"


def _reset(project: str) -> None:
    from chronicle.settings import Settings
    from chronicle.storage.db import transaction

    with transaction(Settings()) as conn:
        conn.execute("DELETE FROM weekly_reports WHERE project_id = ?", [project])
        conn.execute("DELETE FROM weekly_report_versions WHERE project_id = ?", [project])


class _Windows:
    """Counts DuckDB windows (opens) and report write batches, to say where the time goes."""

    def __init__(self) -> None:
        import chronicle.storage.files
        import chronicle.storage.reports

        self.opens = self.batches = 0
        open_, write = chronicle.storage.files._open, chronicle.storage.reports.ReportWriter._write

        def counting_open(*args: Any) -> Any:
            self.opens += 1
            return open_(*args)

        def counting_write(writer: Any, tickets: list[Any]) -> None:
            self.batches += 1
            write(writer, tickets)

        chronicle.storage.files._open = counting_open
        chronicle.storage.reports.ReportWriter._write = counting_write

    def reset(self) -> tuple[int, int]:
        out, (self.opens, self.batches) = (self.opens, self.batches), (0, 0)
        return out


def _cpu_s() -> tuple[float, float]:
    """(worker, server) CPU seconds: this process (the flow and its task threads) and its children (the
    harness's Prefect API server), so a change that moves cost to the server is seen."""
    import psutil

    me = psutil.Process()
    worker = sum(me.cpu_times()[:2])
    server = me.cpu_times().children_user + me.cpu_times().children_system  # reaped children
    for child in me.children(recursive=True):
        try:
            server += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            continue
    return worker, server


def _run(project: str) -> tuple[float, list[Any]]:
    from chronicle.flows.backfill_weeks import backfill_weeks

    t0 = time.perf_counter()
    rows = backfill_weeks(project_id=project)
    return time.perf_counter() - t0, rows


def _without_audit_rows(weeks: int, latency: dict[str, float], windows: _Windows) -> float:
    """Diagnostic only: the 0 ms pass again with `DuckDBCallLogger.log` a no-op. A week's
    successful attempts are stored in its report's commit, not through `log` (only failed attempts are), so
    this pass should cost the same as the real one: it checks that no per-attempt window is left. Never part
    of the RESULT."""
    import chronicle.storage.llm_log

    _reset("BENCH")
    latency["s"] = 0.0
    original = chronicle.storage.llm_log.DuckDBCallLogger.log
    chronicle.storage.llm_log.DuckDBCallLogger.log = lambda self, record: None  # type: ignore[method-assign]
    try:
        wall, _ = _run("BENCH")
    finally:
        chronicle.storage.llm_log.DuckDBCallLogger.log = original  # type: ignore[method-assign]
    opens, batches = windows.reset()
    print(f"diagnostic, llm_calls rows NOT written: {1000 * wall / weeks:.1f} ms/week, {opens} DuckDB windows, "
          f"{batches} report write batches")
    return 1000 * wall / weeks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--weeks", type=int, default=156)
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--diagnose", action="store_true",
                        help="Also time a 0 ms pass without the per-attempt llm_calls window (diagnostic only).")
    args = parser.parse_args()
    bench_env(Path(tempfile.mkdtemp(prefix="bench-backfill-")) / "home")

    from prefect.testing.utilities import prefect_test_harness

    from chronicle.settings import Settings
    from chronicle.storage.db import transaction
    from chronicle.storage.raw_logs import insert_entries
    from tests.fakellm import FakeLLMServer

    latency = {"s": 0.0}

    def responder(_request: dict[str, Any]) -> str:
        time.sleep(latency["s"])
        return REPLY

    with prefect_test_harness(server_startup_timeout=120), FakeLLMServer() as server:
        os.environ["LLM_URL"] = server.base_url
        os.environ["CHRONICLE_LLM_CONCURRENCY"] = str(args.concurrency)
        server.responder = responder
        with transaction(Settings()) as conn:
            insert_entries(conn, synthetic_entries("BENCH", args.weeks))
            insert_entries(conn, synthetic_entries("WARMUP", 3, seed=9))
        _run("WARMUP")  # imports, first flow run, client pools: not what a backfill costs per week
        windows = _Windows()
        zero = _zero_latency_pass(args.weeks, server, windows)
        _reset("BENCH")
        latency["s"] = args.latency_ms / 1000
        slow = _latency_pass(args, latency["s"], windows)
        rerun = _rerun_pass(server)
        diagnostic = None
        if args.diagnose:
            diagnostic = _without_audit_rows(args.weeks, latency, windows)
    _write(args, zero, slow, rerun, diagnostic)


def _zero_latency_pass(weeks: int, server: Any, windows: _Windows) -> dict[str, Any]:
    """The backfill with an instant model: its overhead per week, wall and CPU (worker, Prefect API server)."""
    warm_calls = server.calls()
    worker_before, server_before = _cpu_s()
    wall0, rows0 = _run("BENCH")
    worker_after, server_after = _cpu_s()
    worker_ms = 1000 * (worker_after - worker_before) / weeks
    server_ms = 1000 * (server_after - server_before) / weeks
    calls0 = server.calls() - warm_calls
    per_week_ms = 1000 * wall0 / weeks
    print(f"latency 0 ms: CPU per generated week: worker {worker_ms:.1f} ms, Prefect API server {server_ms:.1f} ms "
          f"(load average {os.getloadavg()[0]:.1f}: on a busy machine wall time is CPU time x contention)")
    opens, batches = windows.reset()
    print(f"latency 0 ms: {weeks} weeks in {wall0:.2f}s -> {per_week_ms:.1f} ms/week "
          f"(task median {1000 * statistics.median(r.duration_s for r in rows0):.1f} ms); "
          f"{opens} DuckDB windows for {calls0} LLM calls ({batches} of them report write batches, which also "
          f"carry the weeks' llm_calls rows; the rest planning, leases and flow bookkeeping)")
    return {"wall": wall0, "per_week_ms": per_week_ms, "worker_ms": worker_ms, "server_ms": server_ms,
            "calls": calls0, "opens": opens, "batches": batches}


def _latency_pass(args: argparse.Namespace, latency_s: float, windows: _Windows) -> dict[str, Any]:
    """The backfill again, each model call taking `latency_s`, against the ideal weeks x latency / concurrency."""
    wall1, rows1 = _run("BENCH")
    ideal = args.weeks * latency_s / args.concurrency
    over = 1000 * (wall1 - ideal) / args.weeks
    opens1, batches1 = windows.reset()
    print(f"latency {args.latency_ms:.0f} ms, concurrency {args.concurrency}: {wall1:.2f}s vs ideal "
          f"{ideal:.2f}s = {wall1 / ideal:.3f}x ({over:.1f} ms/week above ideal); {opens1} DuckDB windows, "
          f"{batches1} report write batches")
    return {"wall": wall1, "rows": rows1, "ideal": ideal, "opens": opens1, "batches": batches1}


def _rerun_pass(server: Any) -> dict[str, Any]:
    """A rerun: every week cached, no model call."""
    before = server.calls()
    wall2, rows2 = _run("BENCH")
    rerun_calls = server.calls() - before
    cached = sum(r.outcome == "cached" for r in rows2)
    print(f"rerun: {wall2:.2f}s, {rerun_calls} LLM calls, {cached}/{len(rows2)} weeks cached")
    return {"wall": wall2, "calls": rerun_calls, "cached": cached}


def _write(args: argparse.Namespace, zero: dict[str, Any], slow: dict[str, Any], rerun: dict[str, Any],
           diagnostic: float | None) -> None:
    wall1, ideal, rows1 = slow["wall"], slow["ideal"], slow["rows"]
    ok = zero["per_week_ms"] <= 10 and zero["server_ms"] <= 5 and wall1 / ideal <= 1.15 and rerun["calls"] == 0
    write_result("backfill", ours=wall1, baseline=ideal, unit="s",
                 measure=(f"156-week backfill wall time, 500 ms stub LLM, concurrency 8; at 0 ms: "
                          f"{zero['per_week_ms']:.1f} ms/week wall, CPU per week worker {zero['worker_ms']:.1f} ms "
                          f"(the stub endpoint's included), Prefect server {zero['server_ms']:.1f} ms; rerun "
                          f"{rerun['calls']} LLM calls"),
                 baseline_name="ideal = weeks x latency / concurrency",
                 goal="<=1.15x ideal at 500ms/c8; <=10 ms/week, server CPU <=5 ms/week at 0 ms; 0 calls on rerun",
                 met=ok,
                 extra={"weeks": args.weeks, "concurrency": args.concurrency, "latency_ms": args.latency_ms,
                        "duckdb_windows_0ms": zero["opens"], "duckdb_windows_per_week_0ms": zero["opens"] / args.weeks,
                        "write_batches_0ms": zero["batches"],
                        "duckdb_windows_latency": slow["opens"], "write_batches_latency": slow["batches"],
                        "load_avg_1m": os.getloadavg()[0], "wall_0ms_s": zero["wall"],
                        "overhead_ms_per_week_0ms": zero["per_week_ms"],
                        "cpu_ms_per_week_0ms": zero["worker_ms"] + zero["server_ms"],
                        "worker_cpu_ms_per_week_0ms": zero["worker_ms"],
                        "server_cpu_ms_per_week_0ms": zero["server_ms"],
                        "calls_0ms": zero["calls"],
                        "wall_latency_s": wall1, "ideal_s": ideal, "ratio_vs_ideal": wall1 / ideal,
                        "diagnostic_ms_per_week_without_llm_calls_rows": diagnostic,
                        "rerun_s": rerun["wall"], "rerun_calls": rerun["calls"], "rerun_cached_weeks": rerun["cached"],
                        "outcomes": {o: sum(r.outcome == o for r in rows1) for o in {r.outcome for r in rows1}}})


if __name__ == "__main__":
    main()

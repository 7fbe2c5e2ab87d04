"""bench/context: `build_history_context` over a 156-week chronicle (goal <= 20 ms).

Baseline: the plain SQL a seed-000 implementation would run — `string_agg` of the summaries in week
order — through the same `chronicle.storage.db.connect` window, in the same process. Both include opening
DuckDB (a fresh short window each time, as Chronicle always does). Reports are written by the
offline engine straight into DuckDB (no Prefect needed for this measure).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._weekly_util import bench_env, offline_reports, synthetic_entries, write_result

PROJECT = "BENCH"


def _timings(*fns: Callable[[], object], runs: int) -> list[list[float]]:
    """Milliseconds per call of each function, interleaved so machine load hits all of them alike."""
    for fn in fns:
        fn()  # warm: imports, first DuckDB open of the file
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            out[i].append(1000 * (time.perf_counter() - t0))
    return out


def _write_reports(weeks: int) -> None:
    from chronicle.settings import Settings
    from chronicle.storage import reports
    from chronicle.storage.db import transaction
    from chronicle.storage.raw_logs import insert_entries

    entries = synthetic_entries(PROJECT, weeks)
    with transaction(Settings()) as conn:
        insert_entries(conn, entries)
        reports.save_reports(conn, [(r, False, "bench", None) for r in offline_reports(entries, PROJECT)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--weeks", type=int, default=156)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    bench_env(Path(tempfile.mkdtemp(prefix="bench-context-")) / "home")

    from chronicle.services.history import build_history_context
    from chronicle.settings import Settings
    from chronicle.storage.db import connect

    settings = Settings()

    _write_reports(args.weeks)

    def baseline() -> str:
        with connect(settings) as conn:
            return conn.execute(
                "SELECT string_agg('[Week ' || week_number || ']: ' || summary, chr(10) ORDER BY week_number) "
                "FROM weekly_reports WHERE project_id = ?", [PROJECT]).fetchall()[0][0]

    ours, base = _timings(lambda: build_history_context(settings, PROJECT), baseline, runs=args.runs)
    text = build_history_context(settings, PROJECT)
    assert text.count("[Week ") == args.weeks
    budget = 8000
    t0 = time.perf_counter()
    folded = build_history_context(settings, PROJECT, max_tokens=budget)
    first_fold = 1000 * (time.perf_counter() - t0)
    [cached_fold] = _timings(lambda: build_history_context(settings, PROJECT, max_tokens=budget), runs=args.runs)
    med, med_base = statistics.median(ours), statistics.median(base)
    print(f"{args.weeks} weeks, {len(text)} chars: build_history_context median {med:.2f} ms "
          f"(p90 {sorted(ours)[int(0.9 * len(ours))]:.2f}), SQL string_agg median {med_base:.2f} ms")
    print(f"with max_tokens={budget}: {folded.count(chr(10)) - 1} lines; first build (rollups written) "
          f"{first_fold:.1f} ms, then {statistics.median(cached_fold):.2f} ms median")
    write_result("context", ours=med, baseline=med_base, unit="ms",
                 measure="build_history_context of 156 weeks (median)",
                 baseline_name="plain SQL string_agg of the summaries", goal="<=20 ms for 156 weeks", met=med <= 20,
                 extra={"weeks": args.weeks, "chars": len(text), "runs": args.runs, "ours_ms": ours,
                        "baseline_ms": base, "folded_first_ms": first_fold,
                        "folded_cached_median_ms": statistics.median(cached_fold)})


if __name__ == "__main__":
    main()

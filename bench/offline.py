"""bench/offline: the offline weekly engine on real data — Debian changelogs, ~80 entries a week, 290 weeks.

The data (`bench/offline_data.py`) is every upload recorded in this machine's Debian changelogs between
`--from` and `--to`, ingested as JSONL through Chronicle's own ingest. Two figures, each with a baseline
measured in the same run, each the median of `--repeat` repetitions:

1. `offline` — the engine per week, in process, no database: redaction of every entry and actor, the
   extractive report, the faithfulness guard (`make_week_input` + `offline_week`), in CPU time (one thread
   of pure Python: what it takes on a free core; wall time is recorded too). Baseline: the part any engine
   must do, the week's stats and input hash over the same rows. Goal: <= 20 ms per week.
2. `offline-flow` — `backfill_weeks` end to end with the real Prefect API (test harness) and DuckDB: plan,
   one task per week, the report write. Baseline: the cached rerun of the same flow (plan and fan-out,
   nothing generated). Goal: <= 15 ms per week.

`--profile` prints a pyinstrument profile of the engine pass.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._util import load_sampler, result
from bench._weekly_util import bench_env
from bench.offline_data import write_jsonl

PROJECT = "debian"


def _median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median CPU seconds, median wall seconds) of `repeat` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return statistics.median(cpu), statistics.median(wall)


def _weeks(settings: Any) -> tuple[list[Any], dict[int, list[dict]], int]:
    from chronicle.storage import week_inputs
    from chronicle.storage.db import connect
    from chronicle.weeks import IsoWeek, week_range

    with connect(settings) as conn:
        first, last = week_inputs.week_span(conn, PROJECT)
        rows = week_inputs.week_rows(conn, PROJECT, first, last)
        before = week_inputs.enrolled_before(conn, PROJECT, first)
    return list(week_range(IsoWeek.from_number(first), IsoWeek.from_number(last))), rows, before


def engine_pass(settings: Any, weeks: list[Any], rows: dict[int, list[dict]], before: int) -> int:
    """Every week through the offline engine, as `plan_project` + `run_week` do it; returns reports flagged."""
    from chronicle.redaction.configured import redactor_for
    from chronicle.weekly.engine import offline_week
    from chronicle.weekly.model import make_week_input

    tz, redactor, running, flagged = settings.tz_for(PROJECT), redactor_for(settings), before, 0
    getattr(redactor, "_cache", {}).clear()  # each pass pays for its own redaction, as one backfill run does
    for week in weeks:
        week_input = make_week_input(PROJECT, week, rows.get(week.number, []), running, tz, redactor)
        running = week_input.stats["enrolled_total"]
        flagged += offline_week(week_input, settings.weekly.report_max_chars).needs_review
    return flagged


def stats_pass(weeks: list[Any], rows: dict[int, list[dict]], before: int) -> None:
    """The baseline: what every engine computes over the same rows (deterministic stats, input hash)."""
    from chronicle.weekly.model import input_hash
    from chronicle.weekly.stats import week_stats

    running = before
    for week in weeks:
        week_rows = rows.get(week.number, [])
        running = week_stats(week_rows, running)["enrolled_total"]
        input_hash(week_rows)


def _flow(repeat: int, n_weeks: int) -> tuple[float, float, dict[str, int]]:
    """(median flow s, median cached-rerun s, outcomes of the last run) with the real Prefect API."""
    from prefect.testing.utilities import prefect_test_harness

    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.settings import Settings
    from chronicle.storage.db import transaction

    def reset() -> None:
        with transaction(Settings()) as conn:
            conn.execute("DELETE FROM weekly_reports WHERE project_id = ?", [PROJECT])
            conn.execute("DELETE FROM weekly_report_versions WHERE project_id = ?", [PROJECT])

    walls, reruns, outcomes = [], [], {}
    with prefect_test_harness(server_startup_timeout=120):
        backfill_weeks(project_id=PROJECT, end_week="2018-W30")  # imports, first flow run: not per-week cost
        for _ in range(repeat):
            reset()
            t0 = time.perf_counter()
            rows = backfill_weeks(project_id=PROJECT)
            walls.append(time.perf_counter() - t0)
            outcomes = {o: sum(r.outcome == o for r in rows) for o in {r.outcome for r in rows}}
            t0 = time.perf_counter()
            backfill_weeks(project_id=PROJECT)
            reruns.append(time.perf_counter() - t0)
    return statistics.median(walls), statistics.median(reruns), outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="start", default="2018-06-01")
    parser.add_argument("--to", dest="end", default="2024-01-01")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="pyinstrument profile of one engine pass")
    parser.add_argument("--no-flow", action="store_true", help="engine only (no Prefect)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-offline-"))
    bench_env(home / "home")

    from chronicle.services.ingest import FileIngestor
    from chronicle.settings import Settings

    settings = Settings()
    data = home / "debian.jsonl"
    lines, files = write_jsonl(data, datetime.fromisoformat(args.start), datetime.fromisoformat(args.end))
    ingested = FileIngestor(settings).ingest(data)
    weeks, rows, before = _weeks(settings)
    entries = sum(len(r) for r in rows.values())
    print(f"{lines:,} uploads from {files} changelogs -> {ingested.entries_added:,} entries, {len(weeks)} ISO weeks "
          f"({len(rows)} with entries, median {statistics.median(len(r) for r in rows.values()):.0f}/week)")

    if args.profile:
        _profile(settings, weeks, rows, before)

    sampler = load_sampler()
    with sampler:
        engine_pass(settings, weeks, rows, before)  # warm: compiled patterns, caches of the process
        flagged = engine_pass(settings, weeks, rows, before)
        engine_s, engine_wall = _median_time(lambda: engine_pass(settings, weeks, rows, before), args.repeat)
        stats_s, stats_wall = _median_time(lambda: stats_pass(weeks, rows, before), args.repeat)
    per_week = 1000 * engine_s / len(weeks)
    print(f"engine: {per_week:.2f} ms/week CPU, {1000 * engine_wall / len(weeks):.2f} ms/week wall ({flagged} of "
          f"{len(weeks)} reports flagged for review); stats+hash only: {1000 * stats_s / len(weeks):.2f} ms/week CPU")
    common = {"weeks": len(weeks), "entries": entries, "changelogs": files, "repeat": args.repeat,
              "period": f"{args.start}..{args.end}"}
    # The engine is one thread of pure Python: its CPU time is what it takes on a free core, whatever else runs.
    result("offline", measure=f"offline weekly engine, CPU per week ({len(weeks)} weeks of Debian changelogs, "
                              f"{entries / len(weeks):.0f} entries/week)",
           ours=engine_s / len(weeks), baseline=stats_s / len(weeks), unit="s",
           baseline_name="stats + input hash of the same rows", goal="<=20 ms/week", ok=per_week <= 20,
           extra={**common, "flagged": flagged, "engine_wall_ms_per_week": 1000 * engine_wall / len(weeks),
                  "stats_wall_ms_per_week": 1000 * stats_wall / len(weeks), **sampler.record()})
    if not args.no_flow:
        _flow_result(args.repeat, len(weeks), common)


def _profile(settings: Any, weeks: list[Any], rows: dict[int, list[dict]], before: int) -> None:
    """A pyinstrument profile of one engine pass, printed."""
    from pyinstrument import Profiler

    profiler = Profiler()
    profiler.start()
    engine_pass(settings, weeks, rows, before)
    profiler.stop()
    print(profiler.output_text(unicode=False, color=False))


def _flow_result(repeat: int, n_weeks: int, common: dict[str, Any]) -> None:
    """The same weeks through the backfill_weeks flow (a real Prefect API), against its cached rerun."""
    sampler = load_sampler()
    with sampler:
        wall, rerun, outcomes = _flow(repeat, n_weeks)
    flow_ms = 1000 * wall / n_weeks
    print(f"flow: {wall:.2f}s = {flow_ms:.1f} ms/week ({outcomes}); cached rerun {rerun:.2f}s")
    result("offline-flow", measure=f"offline backfill_weeks flow per week ({n_weeks} weeks, real Prefect API)",
           ours=wall / n_weeks, baseline=rerun / n_weeks, unit="s",
           baseline_name="cached rerun of the same flow", goal="<=15 ms/week", ok=flow_ms <= 15,
           extra={**common, "outcomes": outcomes, **sampler.record()})


if __name__ == "__main__":
    main()
